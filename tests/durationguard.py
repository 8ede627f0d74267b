"""Find the tests that compare a measured duration with a bound (DESIGN.md, "Tests": no test
asserts a timing; timings are `make bench`'s, and a test must pass on a busy machine).

:func:`duration_asserts` reads a test file's source with :mod:`ast` and reports every check whose
compared expression is a *duration*. A value is a duration when it derives from

* two readings of a clock (``time.perf_counter() - t0``; ``time.time``, ``monotonic``,
  ``process_time``, ``datetime.now`` ... are clocks), or ``timeit``'s result;
* a name, attribute, key or function whose name says it is one (or a ratio of them): a word
  ``seconds``, ``secs``, ``runtime``, ``duration``, ``elapsed``, ``wall``, ``latency``, ``timing``,
  ``speedup``, ``overhead``, ``throughput``, a matmul rate (``gemm``, ``gflops``, ``tflops``: a
  throughput over the measured peak is a ratio of two timings), or a unit suffix
  ``_s``/``_ms``/``_sec``/``_time`` after a word (``exec_s``, ``p95_ms``, ``tokens_per_s``,
  ``train_time``; not ``f_s``);

through arithmetic, subscripts, attributes and the functions that keep a value's unit (``min``,
``max``, ``sum``, ``abs``, ``float``, ``np.median`` ...), and through the names a function assigns
them to. A check is an ``assert``, an ``if`` that calls ``pytest.fail`` or raises, a comparison
with ``pytest.approx`` or a ``numpy.testing``/``unittest`` assertion.

False positives are kept out by what is read, not by a list of exceptions:

* a single reading of a clock is an *instant*, not a duration: ``time.monotonic() > deadline``
  (a hang guard's deadline) is instant against instant and passes;
* only orderings (``<``, ``<=``, ``>``, ``>=``) and approximate equality bound a value; an exact
  ``==`` of a value written by the test itself is not a measurement's bound, nor is a figure
  approximately equal to its formula of other figures of the same run
  (``b["speedup"] == pytest.approx(b["bf16_per_s"] / b["fp32_per_s"])``: timings on both sides);
* a duration checked against zero only (``seconds > 0``, ``run["wall_seconds"] >= 0``) says the
  figure was recorded, which no machine's speed changes; the sign of a *difference* of durations
  (``t_inline - t_plain > 0``) is a timing comparison and is reported;
* a count is not a duration: ``len(durations)``, ``cfg.steps``; a timeout passed as an argument
  (``proc.wait(timeout=20)``) compares nothing;
* a test that replaces the clock it reads (``monkeypatch.setattr(mod.time, "perf_counter", fake)``)
  checks durations it planted itself, exactly, and is not read.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["Finding", "duration_asserts", "is_duration_name"]

#: words of a name that make it a duration wherever they stand in it
DURATION_WORDS = frozenset({"seconds", "secs", "runtime", "duration", "durations", "elapsed",
                            "wall", "latency", "latencies", "timing", "timings", "speedup", "overhead",
                            "throughput", "gemm", "gflops", "tflops"})
#: unit suffixes that make a name a duration (or a rate per second) when they end it
DURATION_SUFFIXES = frozenset({"s", "ms", "sec", "time"})
#: ``module.function`` (or a bare name imported from the module) that read a clock: an instant
CLOCK_CALLS = frozenset({"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                         "process_time", "process_time_ns", "thread_time", "thread_time_ns", "now", "utcnow",
                         "today", "default_timer"})
CLOCK_MODULES = frozenset({"time", "datetime", "date", "timeit"})
#: functions that return a duration by themselves (``timeit.timeit``, ``timeit.repeat``)
TIMING_CALLS = frozenset({("timeit", "timeit"), ("timeit", "repeat")})
#: functions and methods whose result keeps the unit of their arguments (or of the object)
UNIT_KEEPING = frozenset({"min", "max", "sum", "abs", "float", "int", "round", "sorted", "list", "tuple",
                          "median", "mean", "average", "percentile", "quantile", "nanmedian", "nanmean",
                          "nanmax", "nanmin", "asarray", "array", "fsum", "fmean", "diff", "cumsum", "std",
                          "item", "total_seconds", "approx"})
#: assertion calls whose arguments are compared (numpy.testing, unittest)
ASSERT_CALLS = frozenset({"assert_array_less", "assert_allclose", "assert_array_almost_equal", "assert_almost_equal",
                          "assert_approx_equal", "assertLess", "assertLessEqual", "assertGreater",
                          "assertGreaterEqual", "assertAlmostEqual", "isclose", "allclose"})
ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
INSTANT, DURATION = 1, 2


@dataclass(frozen=True)
class Finding:
    line: int
    source: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.source}"


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"'s\b", "", name))     # "ratio's CI": no unit s
    return [w for w in re.split(r"[^a-zA-Z0-9]+", name.lower()) if w]


def is_duration_name(name: str) -> bool:
    """Whether a name (identifier, attribute, key, function) says it holds a duration.

    >>> [is_duration_name(n) for n in ("wall_seconds", "exec_s", "p95_ms", "tokens_per_s", "runtime")]
    [True, True, True, True, True]
    >>> [is_duration_name(n) for n in ("steps", "runs", "n_probe_steps", "time", "timeout", "f_s", "second_moment")]
    [False, False, False, False, False, False, False]
    """
    words = _words(name)
    # a unit after a word (exec_s, p95_ms), not an index letter's plural (f_s, ev_s); a rate anywhere
    # (tokens_per_s_ddp)
    return (bool(DURATION_WORDS & set(words))
            or (len(words) > 1 and words[-1] in DURATION_SUFFIXES and len(words[-2]) >= 3)
            or any(a == "per" and b in DURATION_SUFFIXES for a, b in zip(words, words[1:])))


def _dotted(func: ast.expr) -> tuple[str | None, str | None]:
    """``(owner, name)`` of a called function: ``time.perf_counter`` -> ``("time", "perf_counter")``."""
    if isinstance(func, ast.Attribute):
        owner = func.value
        return (owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute)
                else None), func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, None


class _Scope:
    """The kind (instant, duration) of each name a function (or the module) assigns."""

    def __init__(self, parent: "_Scope | None" = None, clock_names: frozenset = frozenset()):
        self.kinds: dict[str, int] = dict(parent.kinds) if parent else {}
        self.clock_names = clock_names      # names imported from a clock module: perf_counter, monotonic

    def kind(self, node: ast.AST | None) -> int:
        """0 (neither), :data:`INSTANT` or :data:`DURATION`."""
        if node is None:
            return 0
        if isinstance(node, ast.Name):
            return DURATION if is_duration_name(node.id) else self.kinds.get(node.id, 0)
        if isinstance(node, ast.Attribute):
            return DURATION if is_duration_name(node.attr) else self.kind(node.value)
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return DURATION if is_duration_name(key.value) else self.kind(node.value)
            return self.kind(node.value)
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if isinstance(node.op, ast.Sub) and left == right == INSTANT:
                return DURATION                         # two readings of a clock
            if INSTANT in (left, right) and isinstance(node.op, (ast.Add, ast.Sub)):
                return INSTANT                          # a deadline: an instant plus a span
            return max(left, right)
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.IfExp):
            return max(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return max((self.kind(e) for e in node.elts), default=0)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = self.child()
            for gen in node.generators:
                inner.bind(gen.target, inner.kind(gen.iter))
            return inner.kind(node.elt)
        if isinstance(node, ast.Call):
            return self._call_kind(node)
        return 0

    def _call_kind(self, node: ast.Call) -> int:
        owner, name = _dotted(node.func)
        if name is None:
            return 0
        if (owner, name) in TIMING_CALLS:
            return DURATION
        if name in CLOCK_CALLS and (owner in CLOCK_MODULES or (owner is None and name in self.clock_names)):
            return INSTANT
        if is_duration_name(name):
            return DURATION                             # elapsed(), td.total_seconds(), bench.run_seconds()
        if name in UNIT_KEEPING:
            args = [*node.args, *(k.value for k in node.keywords)]
            of_object = self.kind(node.func.value) if isinstance(node.func, ast.Attribute) else 0
            return max([of_object, *(self.kind(a) for a in args)])
        return 0                                        # len(), a count, anything else: its own unit

    def bind(self, target: ast.AST, kind: int) -> None:
        if isinstance(target, ast.Name):
            if kind:
                self.kinds[target.id] = max(kind, self.kinds.get(target.id, 0))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind(elt, kind)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, kind)

    def child(self) -> "_Scope":
        return _Scope(self, self.clock_names)


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and not isinstance(node.value, bool) and node.value == 0


def _is_approx(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func)[1] == "approx"


def _bounds_a_duration(scope: _Scope, cmp: ast.Compare) -> bool:
    """Whether one link of a (chained) comparison bounds a duration."""
    operands = [cmp.left, *cmp.comparators]
    for op, left, right in zip(cmp.ops, operands, operands[1:]):
        kinds = scope.kind(left), scope.kind(right)
        if DURATION not in kinds:
            continue                                    # instants (a deadline) or no timing at all
        if isinstance(op, ORDERINGS):
            duration = left if kinds[0] == DURATION else right
            other = right if duration is left else left
            if _is_zero(other) and not isinstance(duration, ast.BinOp):
                continue                                # recorded and not negative: no machine changes that
            return True
        if isinstance(op, (ast.Eq, ast.NotEq)) and (_is_approx(left) or _is_approx(right)) \
                and kinds != (DURATION, DURATION):
            return True                                 # (a figure equal to its formula of others: an identity)
    return False


def _checks(scope: _Scope, expr: ast.AST) -> bool:
    """Whether any comparison or assertion call inside ``expr`` bounds a duration."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Compare):
            # comprehensions inside the check (all(f["p95_ms"] < 50 for f in figs)): their targets
            # take the kind of what they iterate
            if _bounds_a_duration(_comprehension_scope(scope, expr, node), node):
                return True
        elif isinstance(node, ast.Call) and _dotted(node.func)[1] in ASSERT_CALLS:
            args = [*node.args[:2], *(k.value for k in node.keywords if k.arg in ("x", "y", "actual", "desired"))]
            if any(scope.kind(a) == DURATION for a in args):
                return True
    return False


def _comprehension_scope(scope: _Scope, expr: ast.AST, target: ast.AST) -> _Scope:
    """``scope`` with the targets of every comprehension of ``expr`` that contains ``target`` bound."""
    inner = None
    for node in ast.walk(expr):
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)) and \
                any(n is target for n in ast.walk(node)):
            inner = inner or scope.child()
            for gen in node.generators:
                inner.bind(gen.target, inner.kind(gen.iter))
    return inner or scope


def _fails(body: list[ast.stmt]) -> bool:
    """Whether a block fails the test: ``pytest.fail(...)``, ``raise AssertionError``/any raise."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Raise):
                return True
            if isinstance(node, ast.Call) and _dotted(node.func) == ("pytest", "fail"):
                return True
    return False


def _patches_a_clock(func: ast.AST) -> bool:
    """Whether a function replaces a clock (``monkeypatch.setattr(mod.time, "perf_counter", fake)``,
    ``mock.patch("time.monotonic", ...)``): the durations it then reads are planted, not measured."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and _dotted(node.func)[1] in ("setattr", "patch", "object"):
            for arg in node.args[:2]:
                name = arg.value.rpartition(".")[2] if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    else arg.attr if isinstance(arg, ast.Attribute) else None
                if name in CLOCK_CALLS:
                    return True
    return False


class _Visitor(ast.NodeVisitor):
    def __init__(self, source: str, clock_names: frozenset):
        self.source = source
        self.scope = _Scope(clock_names=clock_names)
        self.found: list[Finding] = []

    def _report(self, node: ast.AST) -> None:
        text = ast.get_source_segment(self.source, node) or ast.unparse(node)
        self.found.append(Finding(node.lineno, text.splitlines()[0].strip()))

    def visit_FunctionDef(self, node):
        if _patches_a_clock(node):
            return                                      # its durations are the test's own, not measured
        outer, self.scope = self.scope, self.scope.child()
        self.generic_visit(node)
        self.scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node):
        kind = self.scope.kind(node.value)
        for target in node.targets:
            self.scope.bind(target, kind)
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self.scope.bind(node.target, self.scope.kind(node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self.scope.bind(node.target, self.scope.kind(node.value))
        self.generic_visit(node)

    def visit_For(self, node):
        self.scope.bind(node.target, self.scope.kind(node.iter))
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self.scope.bind(item.optional_vars, self.scope.kind(item.context_expr))
        self.generic_visit(node)

    def visit_Assert(self, node):
        if _checks(self.scope, node.test):
            self._report(node)
        self.generic_visit(node)

    def visit_If(self, node):
        if _fails(node.body) and _checks(self.scope, node.test):
            self._report(node)
        self.generic_visit(node)

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.attr in ("append", "extend", "insert", "add"):
            # times.append(time.perf_counter() - t0): the list holds durations
            self.scope.bind(call.func.value, max((self.scope.kind(a) for a in call.args), default=0))
        # a bare assertion call: np.testing.assert_array_less(elapsed, 5.0), self.assertLess(...)
        if isinstance(call, ast.Call) and _dotted(call.func)[1] in ASSERT_CALLS and _checks(self.scope, call):
            self._report(node)
        self.generic_visit(node)


def duration_asserts(source: str) -> list[Finding]:
    """Every check of ``source`` (a test module's text) that compares a measured duration with a bound.

    >>> [str(f) for f in duration_asserts("import time\\nt0 = time.perf_counter()\\nrun()\\n"
    ...                                   "assert time.perf_counter() - t0 < 5\\n")]
    ['line 4: assert time.perf_counter() - t0 < 5']
    >>> duration_asserts("import time\\ndeadline = time.monotonic() + 60\\n"
    ...                  "assert time.monotonic() < deadline\\nassert cfg.steps <= 10\\n")
    []
    """
    tree = ast.parse(source)
    clock_names = frozenset(a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                            and n.module in ("time", "timeit", "datetime") for a in n.names)
    visitor = _Visitor(source, clock_names)
    visitor.visit(tree)
    return visitor.found
