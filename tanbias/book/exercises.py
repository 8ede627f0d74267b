"""Checkers for the inline exercises, ARENA style (chapters 4, 6, 8).

Each ``check_exercise_N`` runs the reader's function on small cases and edge
cases, compares with a reference, and either prints a one-line success message
or raises ``AssertionError`` with a diagnostic that names the likely mistake.
The references live here, next to their checkers, so that chapters never
import solution code from a folder.

One section per exercise:

* Exercise 1 (chapter 4): the O(t) normal-to-tangent gradient ratio.
* Exercise 2 (chapter 4): which token type's normal signal is more suppressed.
* Exercise 3 (chapter 6): does the feedback loop compound or repeat?
* Exercise 4 (chapter 8): the sign of the balancing effect, from the mechanism
  and from the committed 2x2 sweep; extended in chapter 10 to the dose-response
  (:func:`check_exercise_4_dose`): sign and shape predicted before looking.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from tanbias.stats import interval_word
from tanbias.theory.gradients import gradient_ratio, split_gradient

__all__ = [
    "reference_gradient_ratio",
    "check_exercise_1",
    "reference_more_suppressed",
    "reference_relative_suppression",
    "check_exercise_2",
    "reference_loop_gains",
    "check_exercise_3",
    "reference_balancing_effect",
    "check_exercise_4",
    "reference_dose_change",
    "check_exercise_4_dose",
]

_RTOL = 1e-6


# ============================================================================
# shared helpers
# ============================================================================

def _as_float(value, what):
    """The reader's return value as a float, or a clear AssertionError."""
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:   # numpy / torch scalars
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise AssertionError(f"{what} should return a float, got {type(value).__name__} "
                             f"({value!r}).")
    return float(value)


def _same(a, b, rtol=_RTOL):
    if math.isinf(a) or math.isinf(b):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-300)


def _diagnose(got, expected, candidates, context):
    """Raise the message of the first known mistake that reproduces ``got``."""
    for value, message in candidates:
        if value is not None and _same(got, value):
            raise AssertionError(f"{message} ({context}: expected {expected:.6g}, got {got:.6g})")
    raise AssertionError(f"Wrong value ({context}): expected {expected:.6g}, got {got:.6g}.")


# ============================================================================
# Exercise 1 (chapter 4): reproduce the O(t) scaling of the gradient ratio
# ============================================================================

def reference_gradient_ratio(x, mu, delta, tangent_basis, normal_basis) -> float:
    """Reference solution of exercise 1: the RMS (energy) normal-to-tangent ratio.

    ``sqrt(sum_i ||G_i P_N||_F^2 / sum_i ||G_i P_T||_F^2)`` for the per-sample
    weight gradients ``G_i = delta_i (x_i - mu)^T`` of a linear layer.

    Parameters
    ----------
    x : ndarray, shape (n, D)
        Layer inputs (not centred).
    mu : ndarray, shape (D,)
        The centroid.
    delta : ndarray, shape (n, m)
        Back-propagated signals.
    tangent_basis, normal_basis : ndarray, shapes (D, d), (D, D-d)

    Returns
    -------
    float

    Example
    -------
    >>> T, N = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    >>> x = np.array([[1.1, 2.01], [0.9, 2.01]])          # mu + (u, u^2), u = +-0.1
    >>> round(reference_gradient_ratio(x, [1.0, 2.0], np.ones((2, 1)), T, N), 12)
    0.1
    """
    x_c = np.asarray(x, dtype=float) - np.asarray(mu, dtype=float)
    return gradient_ratio(x_c, delta, tangent_basis, normal_basis, form="rms")


def _exercise_1_cases():
    """(label, (x, mu, delta, T, N)) cases: hand-made, manifold, single sample, zero signals."""
    from tanbias.theory.manifolds import GeneralizedCylinder

    cases = []
    T2, N2 = np.eye(2)[:, :1], np.eye(2)[:, 1:]
    u = np.array([0.1, -0.1, 0.1, -0.1])
    mu2 = np.array([1.0, 2.0])
    cases.append(("parabola x = mu + (u, u^2), u = +-0.1, constant signal",
                  (mu2 + np.column_stack([u, u ** 2]), mu2, np.ones((4, 1)), T2, N2)))
    M = GeneralizedCylinder(1, 2, R=1.0, D=5, seed=3)
    rng = np.random.default_rng(11)
    s = M.sample_at_radius(0.1, 40, rng)
    delta = rng.standard_normal((40, 3)) * rng.uniform(0.1, 3.0, size=(40, 1))
    cases.append(("cylinder S^1 x R in R^5 at t = 0.1, Gaussian signals of varying size",
                  (s.y, M.mu, delta, M.tangent_basis, M.normal_basis)))
    cases.append(("a single sample (edge case: n = 1)",
                  (s.y[:1], M.mu, delta[:1], M.tangent_basis, M.normal_basis)))
    d0 = delta[:10].copy()
    d0[::2] = 0.0                                   # samples with no signal contribute nothing
    cases.append(("half of the back-propagated signals are zero (edge case)",
                  (s.y[:10], M.mu, d0, M.tangent_basis, M.normal_basis)))
    return cases


def _exercise_1_mistakes(x, mu, delta, T, N, expected):
    x = np.asarray(x, dtype=float)
    x_c = x - mu
    g = split_gradient(x_c, delta, T, N)
    no_delta = split_gradient(x_c, np.ones((x.shape[0], 1)), T, N).rms_ratio
    with np.errstate(divide="ignore", invalid="ignore"):
        per_sample = float(np.mean(g.per_sample_ratio[g.tangent > 0]))
    return [
        (gradient_ratio(x, delta, T, N),
         "Did you centre x before projecting? Subtract the centroid first (x_c = x - mu): "
         "mu is neither tangent nor normal signal, and it swamps both."),
        (gradient_ratio(x - x.mean(axis=0), delta, T, N),
         "You centred at the batch mean; the statement centres at the centroid mu "
         "(x_c = x - mu). The batch mean also removes the mean normal offset."),
        (1.0 / expected if expected else None,
         "You returned tangent/normal instead of normal/tangent."),
        (g.mean_ratio,
         "You used the mean gradient, which cancels on symmetric samples: use the RMS "
         "(Frobenius) form sqrt(sum_i ||G_i P_N||^2 / sum_i ||G_i P_T||^2)."),
        (expected ** 2,
         "You returned the energy ratio (a ratio of squared norms): take its square root."),
        (per_sample,
         "You averaged the per-sample ratios ||n_i|| / ||v_i||: the exercise asks for the "
         "RMS form, which weights each sample by its gradient energy."),
        (no_delta,
         "You dropped the back-propagated signal: each sample's gradient delta_i x_i^T is "
         "weighted by ||delta_i||, so sum ||delta_i||^2 ||n_i||^2, not sum ||n_i||^2."),
    ]


def check_exercise_1(fn) -> None:
    """Check the reader's ``gradient_ratio(x, mu, delta, tangent_basis, normal_basis)``.

    The function must return the RMS (energy) ratio
    ``sqrt(sum_i ||G_i P_N||_F^2 / sum_i ||G_i P_T||_F^2)`` with
    ``G_i = delta_i (x_i - mu)^T``, as a float.

    Parameters
    ----------
    fn : callable
        ``fn(x (n, D), mu (D,), delta (n, m), tangent_basis (D, d),
        normal_basis (D, D-d)) -> float``.

    Raises
    ------
    AssertionError
        With the likely mistake (not centring, inverted ratio, mean gradient,
        squared ratio, per-sample average, ignoring ``delta``).

    Example
    -------
    >>> check_exercise_1(reference_gradient_ratio)
    Exercise 1 passed: the RMS ratio matches on 4 cases (0.1 on the parabola at t = 0.1: O(t)).
    """
    cases = _exercise_1_cases()
    for label, args in cases:
        x, mu, delta, T, N = (np.array(a, dtype=float, copy=True) for a in args)
        expected = reference_gradient_ratio(*args)
        got = _as_float(fn(x, mu, delta, T, N), "gradient_ratio")
        if not _same(got, expected):
            _diagnose(got, expected, _exercise_1_mistakes(*args, expected), label)
    print(f"Exercise 1 passed: the RMS ratio matches on {len(cases)} cases "
          f"(0.1 on the parabola at t = 0.1: O(t)).")


# ============================================================================
# Exercise 2 (chapter 4): frequent vs rare token, which is more suppressed?
# ============================================================================

def reference_more_suppressed(t1, t2) -> int:
    """Reference solution of exercise 2: the type with the smaller radius (1 or 2).

    The normal-to-tangent gradient ratio is ``c t``, so the normal signal is
    suppressed *more* (smaller ratio) for the more concentrated type.

    Example
    -------
    >>> reference_more_suppressed(0.01, 0.3), reference_more_suppressed(0.3, 0.01)
    (1, 2)
    """
    return 1 if t1 < t2 else 2


def reference_relative_suppression(t1, t2) -> float:
    """Predicted ``ratio(type 1) / ratio(type 2)`` on the same manifold: ``t1 / t2``.

    Example
    -------
    >>> reference_relative_suppression(0.02, 0.2)
    0.1
    """
    return t1 / t2


@functools.lru_cache(maxsize=None)
def _simulated_relative(t1, t2):
    """Measured RMS-ratio quotient of two token types on a cylinder (cached)."""
    from tanbias.theory.gradients import two_token_types
    from tanbias.theory.manifolds import GeneralizedCylinder

    df = two_token_types(GeneralizedCylinder(1, 2, R=1.0, D=5, seed=0), t1, t2, n=4000, rng=0)
    return float(df["relative_to_type2"].iloc[0])


_EX2_CASES = ((0.01, 0.3), (0.3, 0.01), (0.05, 0.1), (0.2, 0.02))


def check_exercise_2(more_suppressed, relative_suppression=None) -> None:
    """Check the reader's answer to "which type's normal signal is more suppressed?".

    Parameters
    ----------
    more_suppressed : callable
        ``more_suppressed(t1, t2) -> int``: 1 or 2, the type whose
        normal-to-tangent gradient ratio is smaller.
    relative_suppression : callable, optional
        ``relative_suppression(t1, t2) -> float``: the predicted quotient
        ``ratio(type 1) / ratio(type 2)``; compared with a simulation on a
        cylinder within 5%.

    Raises
    ------
    AssertionError
        With a diagnostic (picked the rare token, answer does not depend on the
        radii, inverted or squared quotient).

    Example
    -------
    >>> check_exercise_2(reference_more_suppressed)
    Exercise 2 passed: the frequent (small-t) type is the more suppressed one.
    """
    for t1, t2 in _EX2_CASES:
        ans = more_suppressed(t1, t2)
        if hasattr(ans, "item"):
            ans = ans.item()
        if isinstance(ans, (bool, np.bool_)) or ans not in (1, 2):
            raise AssertionError(f"more_suppressed should return the type number 1 or 2, got "
                                 f"{ans!r} for t1={t1}, t2={t2}.")
        expected = reference_more_suppressed(t1, t2)
        if ans != expected:
            msg = (f"For t1={t1}, t2={t2} you picked type {ans}, the rare (large-t) token: the "
                   f"ratio normal/tangent is O(t), so smaller t means MORE suppression.")
            if len({more_suppressed(*pair) for pair in _EX2_CASES}) == 1:
                msg += (f" Also, you answer type {ans} whatever the radii: the answer depends "
                        f"on which token is more concentrated, not on its label.")
            raise AssertionError(msg)
    msg = "Exercise 2 passed: the frequent (small-t) type is the more suppressed one."
    if relative_suppression is not None:
        t1, t2 = 0.02, 0.2
        got = _as_float(relative_suppression(t1, t2), "relative_suppression")
        sim = _simulated_relative(t1, t2)
        if not (got > 0 and abs(got / sim - 1.0) <= 0.05):
            ctx = f"t1={t1}, t2={t2}: simulation gives {sim:.4g}, you predicted {got:.4g}"
            for value, message in (
                    (t2 / t1, "You inverted the quotient: ratio(type 1) / ratio(type 2) = "
                              "(c t1) / (c t2) = t1 / t2, below 1."),
                    ((t1 / t2) ** 2, "You squared: the ratio is first order in t (||n|| / ||v|| "
                                     "~ t^2 / t), so the quotient is t1 / t2."),
                    (math.sqrt(t1 / t2), "You took a square root: the ratio itself (not its "
                                         "square) is O(t), so the quotient is t1 / t2.")):
                if abs(got / value - 1.0) <= 0.05:
                    raise AssertionError(f"{message} ({ctx})")
            raise AssertionError(f"Quotient off by more than 5% ({ctx}); the prediction is "
                                 f"t1 / t2.")
        msg += (f" Predicted quotient {got:.3g} vs simulated {sim:.3g}: the frequent type keeps "
                f"{100 * sim:.0f}% of the rare type's normal-to-tangent ratio.")
    print(msg)


# ============================================================================
# Exercise 3 (chapter 6): the feedback loop compounds rather than repeats
# ============================================================================

_EX3_STEP = 500


def reference_loop_gains(df, step) -> dict:
    """Reference solution of exercise 3: alignment gain of each run up to ``step``.

    ``gain = alignment(step) / alignment(0)`` for the closed and the cut run of
    :func:`tanbias.theory.residual.feedback_loop`.

    Parameters
    ----------
    df : pandas.DataFrame
        Output of :func:`tanbias.theory.residual.feedback_loop`.
    step : int
        A logged step.

    Returns
    -------
    dict
        ``{"closed": float, "cut": float}``.
    """
    out = {}
    for loop in ("closed", "cut"):
        g = df[df["loop"] == loop].set_index("step")["alignment"]
        out[loop] = float(g.loc[step] / g.loc[0])
    return out


@functools.lru_cache(maxsize=None)
def _loop_runs():
    """The default (feature-learning) run and a lazy control, 600 steps each (cached)."""
    from tanbias.theory.residual import feedback_loop

    rich = feedback_loop(steps=600, log_every=20)
    lazy = feedback_loop(steps=600, log_every=20, init_scale=1.0)
    return rich, lazy


def _exercise_3_mistakes(df, step, ref):
    def per_loop(col, fn):
        out = {}
        for loop in ("closed", "cut"):
            g = df[df["loop"] == loop].set_index("step")[col]
            out[loop] = fn(g)
        return out

    last = int(df["step"].max())
    return [
        ({"closed": ref["cut"], "cut": ref["closed"]},
         "You swapped the runs: df['loop'] == 'closed' is ordinary SGD, 'cut' the "
         "linearised network whose gradients never see the weight updates."),
        ({k: 1.0 / v for k, v in ref.items()},
         "You divided the wrong way round: gain = alignment at `step` / alignment at step 0."),
        (per_loop("alignment", lambda g: float(g.loc[step] - g.loc[0])),
         "You returned a difference; the gain is a ratio, alignment(step) / alignment(0)."),
        (per_loop("share", lambda g: float(g.loc[step] / g.loc[0])),
         "You used the `share` column (activations); the gain asked for is of `alignment` "
         "(the first layer's weights)."),
        (per_loop("alignment", lambda g: float(g.loc[last] / g.loc[0])),
         f"You used the last logged step ({last}); use the row where df['step'] == step."),
    ]


def check_exercise_3(fn, compounds=None) -> None:
    """Check the reader's ``loop_gains(df, step) -> {"closed": gain, "cut": gain}``.

    The checker runs :func:`tanbias.theory.residual.feedback_loop` twice (600 steps): in
    the default feature-learning regime (``init_scale=0.1``) and in a lazy
    control (``init_scale=1``), and compares the reader's gains at step 500
    with the reference.

    Parameters
    ----------
    fn : callable
        ``fn(df, step) -> dict`` with float values under ``"closed"`` and ``"cut"``.
    compounds : bool, optional
        The reader's prediction: does the closed loop's alignment grow faster
        than the cut loop's (gain closed > gain cut) in the default run?

    Raises
    ------
    AssertionError
        With a diagnostic (swapped runs, inverted ratio, difference, wrong
        column, wrong step, wrong prediction).
    """
    runs = _loop_runs()
    for name, df in zip(("default run (init_scale=0.1)", "lazy control (init_scale=1)"), runs):
        ref = reference_loop_gains(df, _EX3_STEP)
        ans = fn(df.copy(), _EX3_STEP)
        if not isinstance(ans, dict) or set(ans) != {"closed", "cut"}:
            raise AssertionError(f"loop_gains should return a dict with keys 'closed' and 'cut', "
                                 f"got {ans!r}.")
        got = {k: _as_float(v, f"loop_gains(...)[{k!r}]") for k, v in ans.items()}
        if all(_same(got[k], ref[k]) for k in ref):
            continue
        for value, message in _exercise_3_mistakes(df, _EX3_STEP, ref):
            if all(_same(got[k], value[k]) for k in ref):
                raise AssertionError(f"{message} ({name}, step {_EX3_STEP}: expected "
                                     f"{_fmt_gains(ref)}, got {_fmt_gains(got)})")
        raise AssertionError(f"Wrong gains ({name}, step {_EX3_STEP}): expected "
                             f"{_fmt_gains(ref)}, got {_fmt_gains(got)}.")
    rich = reference_loop_gains(runs[0], _EX3_STEP)
    lazy = reference_loop_gains(runs[1], _EX3_STEP)
    truth = rich["closed"] > rich["cut"]
    if compounds is not None and bool(compounds) != truth:
        raise AssertionError(
            f"Your prediction compounds={compounds!r} does not match the run: by step "
            f"{_EX3_STEP} the closed loop's alignment grew x{rich['closed']:.3g} and the cut "
            f"loop's x{rich['cut']:.3g}. With the loop closed, each tangent-aligned update "
            f"makes the next gradients larger along the same directions; with it cut, the "
            f"same one-time bias is only repeated.")
    print(f"Exercise 3 passed. By step {_EX3_STEP}, tangent alignment grew "
          f"x{rich['closed']:.3g} with the loop closed vs x{rich['cut']:.3g} with it cut "
          f"(lazy control: x{lazy['closed']:.3g} vs x{lazy['cut']:.3g}). Look at the later "
          f"steps too: the closed loop does not keep this lead.")


def _fmt_gains(g):
    return "{" + ", ".join(f"{k}: {v:.4g}" for k, v in g.items()) + "}"


# ============================================================================
# Exercise 4 (chapter 8): data balancing, architecture aside
# ============================================================================
#: what exercise 4 measures: late-training log enrichment of the paper's frozen
#: proxy, mean over layers, all tokens
EX4_SELECTION = {"phase": "late", "proxy": "frozen", "layer": "mean", "bucket": "all"}


def _ex4_select(metrics, **over):
    sel = {**EX4_SELECTION, **over}
    m = metrics
    for k, v in sel.items():
        m = m[m[k] == v]
    return m


def reference_balancing_effect(metrics, kind: str, column: str = "log_enrichment", **over) -> float:
    """Mean over seeds of ``m[kind, balanced, s] - m[kind, natural, s]`` (the selection ``EX4_SELECTION``).

    ``metrics`` is :func:`tanbias.lab.analysis.sweep.run_metrics` of the sweep. Negative:
    balancing weakens the tangent alignment of that architecture.
    """
    m = _ex4_select(metrics, **over)
    m = m[m["kind"] == kind]
    wide = m.pivot_table(index="seed", columns="regime", values=column, aggfunc="mean")
    return float((wide["balanced"] - wide["natural"]).mean())


def _exercise_4_mistakes(metrics, kind, ref):
    import numpy as np
    return [
        (-ref, "Sign flipped: the effect of balancing is balanced minus natural, not natural "
               "minus balanced."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", phase="early"),
         "You used the early probe steps; the exercise asks for the last one (phase == 'late')."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", proxy="refit"),
         "You used the refit proxy; the exercise asks for the paper's frozen proxy (proxy == 'frozen')."),
        (reference_balancing_effect(metrics, kind, "log_enrichment", layer=metrics["layer"]
                                    .loc[metrics["layer"] != "mean"].max()),
         "You used the last layer only; use the mean over layers (layer == 'mean')."),
        (reference_balancing_effect(metrics, kind, "excess_iso"),
         "You used the excess ΔIsoScore*; the exercise asks for the log enrichment."),
        (float(np.exp(ref)), "You returned a ratio of enrichments; return the difference of "
                             "*log* enrichments (its exponential is that ratio)."),
    ]


def check_exercise_4(fn, prediction=None, metrics=None) -> None:
    """Check the reader's ``balancing_effect(metrics, kind) -> float`` and their prediction.

    Parameters
    ----------
    fn : callable
        ``fn(metrics, kind)`` with ``metrics`` the sweep's
        :func:`tanbias.lab.analysis.sweep.run_metrics` table and ``kind`` in
        ``{"encoder", "decoder"}``; returns the mean over seeds of (balanced −
        natural) late log enrichment (frozen proxy, mean over layers, all tokens).
    prediction : dict, optional
        ``{"encoder": s, "decoder": s}`` with ``s = -1`` (balancing weakens the
        alignment), ``0`` (no effect) or ``+1`` (strengthens it), made from the
        mechanism before looking.
    metrics : pandas.DataFrame, optional
        Default: the committed sweep under ``data/runs``.

    Raises
    ------
    AssertionError
        With a diagnostic (flipped sign, wrong phase, proxy, layer or metric,
        ratio instead of log ratio; a prediction the data contradict).
    """
    from tanbias.lab.analysis import sweep
    from tanbias.lab.config import KINDS

    if metrics is None:
        metrics = sweep.run_metrics(sweep.load_sweep())
    eff = sweep.effects(metrics, columns=("log_enrichment",))
    verdict = {}
    for kind in KINDS:
        ref = reference_balancing_effect(metrics, kind)
        got = _as_float(fn(metrics.copy(), kind), f"balancing_effect(metrics, {kind!r})")
        if not _same(got, ref, rtol=1e-6):
            for value, message in _exercise_4_mistakes(metrics, kind, ref):
                if _same(got, value, rtol=1e-6):
                    raise AssertionError(f"{message} ({kind}: expected {ref:+.4f}, got {got:+.4f})")
            raise AssertionError(f"Wrong balancing effect for the {kind}: expected {ref:+.4f}, "
                                 f"got {got:+.4f}. Pair the runs by seed and average the differences.")
        row = _ex4_select(eff, contrast=f"balancing | {kind}").iloc[0]
        verdict[kind] = (ref, float(row["lo"]), float(row["hi"]), int(row["n"]))
    if prediction is not None:
        if not isinstance(prediction, dict) or set(prediction) != {"encoder", "decoder"} or any(
                v not in (-1, 0, 1) for v in prediction.values()):
            raise AssertionError("prediction should be a dict {'encoder': s, 'decoder': s} with s in "
                                 f"(-1, 0, +1), got {prediction!r}.")
        for kind, (m, lo, hi, n) in verdict.items():
            decided = {"positive": 1, "negative": -1}.get(interval_word(lo, hi), 0)
            sign = int(np.sign(m))
            if prediction[kind] == 0 and decided != 0:
                raise AssertionError(
                    f"You predicted no effect of balancing for the {kind}; the sweep measures "
                    f"{m:+.3f} (95 % interval [{lo:+.3f}, {hi:+.3f}], {n} seeds), which excludes 0.")
            if prediction[kind] != 0 and prediction[kind] != sign:
                raise AssertionError(
                    f"Your prediction {prediction[kind]:+d} for the {kind} does not match the sweep: "
                    f"balancing changes its late log enrichment by {m:+.3f} (95 % interval "
                    f"[{lo:+.3f}, {hi:+.3f}], {n} seeds).")
    parts = []
    for kind, (m, lo, hi, n) in verdict.items():
        state = ("excludes 0" if interval_word(lo, hi) in ("positive", "negative")
                 else "contains 0: the seeds do not decide")
        parts.append(f"{kind} {m:+.3f} [{lo:+.3f}, {hi:+.3f}] ({state})")
    print("Exercise 4 passed. Balancing changes the late log enrichment by " + "; ".join(parts) + ".")


# ============================================================================
# Exercise 4, extended (chapter 10): the dose-response, sign and shape
# ============================================================================
#: the shapes a reader may predict for the late enrichment at the token knob's flattest level
DOSE_SHAPES = ("absent", "attenuated", "unchanged", "stronger")


def reference_dose_change(table, kind: str, knob: str = "token", column: str = "log_enrichment_late") -> float:
    """Mean over seeds of ``m[flattest level] - m[skewed start]`` along a knob (chapter 10's run table)."""
    from tanbias.lab.analysis.dose import knob_runs
    from tanbias.lab.analysis.dose_design import level_positions

    order = level_positions(knob)
    start, flat = min(order, key=order.get), max(order, key=order.get)
    g = knob_runs(table, knob, kind)
    wide = g.pivot_table(index="seed", columns="level", values=column)
    if start not in wide or flat not in wide:
        return float("nan")            # the runs of one of the two levels are not committed yet
    return float((wide[flat] - wide[start]).dropna().mean())


def check_exercise_4_dose(fn, prediction=None, analysis=None) -> None:
    """Check the reader's ``dose_change(table, kind) -> float`` and their predicted sign and shape.

    Parameters
    ----------
    fn : callable
        ``fn(table, kind)`` with ``table`` chapter 10's :func:`tanbias.lab.analysis.dose.run_table`;
        returns the mean over seeds of (flattest − skewed) late log enrichment along the token knob.
    prediction : dict, optional
        ``{"encoder": {"sign": s, "shape": shape}, "decoder": {...}}``: ``s`` in -1, 0, +1 (the
        fitted dose-response slope of late log enrichment as frequencies flatten) and ``shape`` in
        ``DOSE_SHAPES`` (the enrichment at the flattest level: ``"absent"`` = not above a
        random subspace, ``"attenuated"`` = lower than at the start but present, ``"unchanged"``,
        ``"stronger"``), made from the mechanism before looking. The runs never read
        ``"absent"``: a flattest level whose interval reaches 0 is "not shown present"
        (failing to show presence is not absence), and a predicted shape is then not scored.
    analysis : DoseAnalysis, optional
        Default: :func:`tanbias.lab.analysis.dose.analyse_dose` of the committed runs.

    Raises
    ------
    AssertionError
        With a diagnostic (flipped sign, wrong knob or phase, ratio instead of log ratio; a
        prediction the data contradict).
    """
    from tanbias.lab.analysis import dose
    from tanbias.lab.config import KINDS

    da = dose.analyse_dose() if analysis is None else analysis
    table = da.table
    results = {}
    missing = []
    for kind in KINDS:
        ref = reference_dose_change(table, kind)
        if not np.isfinite(ref):
            missing.append(kind)
            continue
        got = _as_float(fn(table.copy(), kind), f"dose_change(table, {kind!r})")
        if not _same(got, ref, rtol=1e-6):
            mistakes = [(-ref, "Sign flipped: the change is flattest minus start, not start minus flattest."),
                        (reference_dose_change(table, kind, column="log_enrichment_early"),
                         "You used the early phase; the exercise asks for the late enrichment."),
                        (reference_dose_change(table, kind, knob="language"),
                         "You used the language knob (uniform vs skewed); the exercise asks for the token "
                         "knob (b100 vs skewed)."),
                        (float(np.exp(ref)), "You returned a ratio; return the difference of *log* enrichments.")]
            for value, message in mistakes:
                if np.isfinite(value) and _same(got, value, rtol=1e-6):
                    raise AssertionError(f"{message} ({kind}: expected {ref:+.4f}, got {got:+.4f})")
            raise AssertionError(f"Wrong dose change for the {kind}: expected {ref:+.4f}, got {got:+.4f}. "
                                 "Pair the runs by seed (pivot on seed and level) and average the differences.")
        r = da.responses
        row = r[(r["metric"] == "log_enrichment_late") & (r["knob"] == "token") & (r["kind"] == kind)].iloc[0]
        sign = {"+": 1, "-": -1, "0": 0}.get(row["observed"], 0)
        flat = interval_word(row.get("flat_lo", np.nan), row.get("flat_hi", np.nan))
        change = interval_word(row.get("change_lo", np.nan), row.get("change_hi", np.nan))
        # a flattest level whose interval reaches 0 is not shown present; that is not absence, which
        # would need an equivalence margin (dose-posthoc.toml [presence]): a predicted "absent" is not scored
        shape = ("not decided (fewer than two seeds)" if flat == "undecided" else "not shown present"
                 if flat != "positive" else {"negative": "attenuated", "positive": "stronger"}.get(change, "unchanged"))
        results[kind] = (ref, sign, shape, row)
    if prediction is not None:
        ok = isinstance(prediction, dict) and set(prediction) == set(KINDS) and all(
            isinstance(v, dict) and v.get("sign") in (-1, 0, 1) and v.get("shape") in DOSE_SHAPES
            for v in prediction.values())
        if not ok:
            raise AssertionError("prediction should be {'encoder': {'sign': s, 'shape': shape}, 'decoder': {...}} "
                                 f"with s in (-1, 0, +1) and shape in {DOSE_SHAPES}, got {prediction!r}.")
        for kind, (ref, sign, shape, row) in results.items():
            if not np.isfinite(row["end_to_end"]):
                continue
            if prediction[kind]["sign"] != sign:
                raise AssertionError(
                    f"You predicted slope sign {prediction[kind]['sign']:+d} for the {kind}; the dose runs give "
                    f"{sign:+d} (end-to-end change of late log enrichment {row['end_to_end']:+.3f}, 95 % interval "
                    f"[{row['end_to_end_lo']:+.3f}, {row['end_to_end_hi']:+.3f}], {row['n_seeds']} seeds).")
            if prediction[kind]["shape"] != shape and shape in DOSE_SHAPES:
                raise AssertionError(
                    f"You predicted '{prediction[kind]['shape']}' at the flattest level for the {kind}; the runs "
                    f"say '{shape}' (flattest − start {row['change']:+.3f} [{row['change_lo']:+.3f}, "
                    f"{row['change_hi']:+.3f}]; flattest level's log enrichment {row['flat_mean']:+.3f} "
                    f"[{row['flat_lo']:+.3f}, {row['flat_hi']:+.3f}]).")
    parts = [f"{kind}: flattest − start {ref:+.3f}, slope sign {sign:+d}, '{shape}'" if sign else
             f"{kind}: flattest − start {ref:+.3f}, no slope sign decided, '{shape}'"
             for kind, (ref, sign, shape, _) in results.items()]
    parts += [f"{kind}: not checked, its skewed or flattest runs are not committed yet (make dose)"
              for kind in missing]
    print("Exercise 4 (dose) passed. " + "; ".join(parts) + ".")
