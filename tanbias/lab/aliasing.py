"""Input aliasing: a frequency knob that keeps the text (chapter 11).

Each occurrence of a frequent type ``w`` is shown to the model as one of ``k_w``
*alias ids*, drawn uniformly per occurrence: alias 0 is ``w``'s own id, aliases
``1 .. k_w - 1`` are new rows of the input embedding, after the tokenizer's
vocabulary. Each input id then appears ``f_w / k_w`` as often as ``w`` does,
while the text, its grammar, the targets and the loss stay what they were: the
decoder still predicts the original next type, the encoder's masked positions
still predict the original type, and the output layer is unchanged.

How many aliases a type gets grows with its frequency (:func:`alias_counts`):
``k_w = max(1, round((f_w / f0) ** exponent))`` for types more frequent than
``f0``, 1 for the others and for the special tokens. ``exponent = 0`` aliases
nothing; ``exponent = 1`` brings every alias of a type above ``f0`` down to about
``f0``. The input stream's collision probability is then ``Σ_w f_w² / k_w``
(:func:`input_collision`).

:class:`AliasMap` holds the counts and the layout of the new rows, draws the
aliases of a batch (:meth:`AliasMap.apply`, seeded) and maps an input id back to its
type (:meth:`AliasMap.type_of`). Which frequencies a run's map is built from is
:attr:`tanbias.lab.data.Stream.aliases` (the run's expected stream frequencies); the
model's extra input rows are :func:`tanbias.lab.models.make_model`'s ``n_inputs``.

Do a type's aliases become one concentrated cloud, or k diffuse ones?
:func:`alias_convergence` measures it on a fixed text, contexts held fixed: the
text is shown once per alias ``j`` with every occurrence of the measured types as
their ``j``-th alias, and at each layer the distance between the centroids of a
type's aliases is set against the type's own radius around each centroid.

:class:`AliasingHook` is what an aliased run adds to the training loop
(:class:`tanbias.lab.hooks.Hook`): the input ids it is shown, counted, and the
convergence at every probe step and after the last.

Imports only :mod:`tanbias.lab.config`, :mod:`tanbias.lab.runs` and
:mod:`tanbias.lab.hooks` (below :mod:`tanbias.lab.data` in the chain); the loop
hands the hook the run's stream and model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tanbias._checks import check_int, check_real
from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.config import N_SPECIAL
from tanbias.lab.hooks import Hook

__all__ = ["alias_counts", "input_collision", "AliasMap", "CONVERGENCE_TYPES", "CONVERGENCE_ALIASES",
           "CONVERGENCE_MIN_COUNT", "convergence_targets", "alias_convergence", "AliasingHook"]


def alias_counts(freq, exponent: float, f0: float, n_special: int = N_SPECIAL) -> np.ndarray:
    """How many alias ids each type gets: ``max(1, round((f / f0) ** exponent))`` above ``f0``, else 1.

    Parameters
    ----------
    freq : array (vocab,)
        Relative frequency of every type in the training stream (any positive scale: only
        ``f / f0`` matters, so pass relative frequencies).
    exponent : float
        In ``[0, 2]``; 0 aliases nothing.
    f0 : float
        The threshold frequency, in ``(0, 1)``: types at or below it keep one id.
    n_special : int
        Ids ``0 .. n_special - 1`` (the special tokens) are never aliased.

    Returns
    -------
    ndarray of int64, shape (vocab,)
        ``k`` per type, at least 1.

    Example
    -------
    >>> alias_counts([0.5, 0.04, 0.01, 1e-3, 1e-5], 1.0, 1e-3, n_special=1).tolist()
    [1, 40, 10, 1, 1]
    >>> alias_counts([0.5, 0.04, 0.01], 0.5, 1e-3, n_special=0).tolist()
    [22, 6, 3]
    """
    exponent = check_real("alias", exponent, 0, 2, lo_open=False, hi_open=False,
                          hint="The alias exponent: 0 aliases nothing, 1 flattens every alias to about f0.")
    f0 = check_real("alias_f0", f0, 0, 1)
    f = np.asarray(freq, np.float64)
    if f.ndim != 1 or not np.all(np.isfinite(f)) or np.any(f < 0):
        raise ParameterError(f"freq (shape {f.shape}) is out of range: valid range is a 1-D array of "
                             "non-negative finite frequencies, one per type.")
    k = np.ones(f.shape, np.int64)
    above = f > f0
    if exponent > 0:
        k[above] = np.maximum(1, np.rint((f[above] / f0) ** exponent)).astype(np.int64)
    k[:int(n_special)] = 1
    return k


def input_collision(freq, k, n_special: int = N_SPECIAL) -> float:
    """The collision probability of the input stream, ``Σ_w p_w² / k_w`` over the non-special types
    (``p`` the frequencies renormalised over them): each of ``k_w`` aliases carries ``p_w / k_w``.

    >>> input_collision([0.5, 0.5], [1, 1], n_special=0), input_collision([0.5, 0.5], [2, 2], n_special=0)
    (0.5, 0.25)
    """
    f = np.asarray(freq, np.float64)[n_special:]
    k = np.asarray(k, np.float64)[n_special:]
    p = f / f.sum()
    return float(np.sum(p ** 2 / k))


@dataclass(frozen=True)
class AliasMap:
    """The aliases of every type and the layout of the new input rows.

    Type ``w``'s aliases are ``w`` itself and the rows
    ``vocab + offset[w] .. vocab + offset[w] + k[w] - 2``; ``n_inputs`` rows in all.

    Example
    -------
    >>> import torch
    >>> m = AliasMap.from_counts([1, 3, 1, 2])
    >>> m.n_inputs, m.aliases(1), m.aliases(3), m.type_of([0, 4, 5, 6, 3]).tolist()
    (7, [1, 4, 5], [3, 6], [0, 1, 1, 3, 3])
    >>> x = m.apply(torch.tensor([[1, 1, 2, 3]]), torch.Generator().manual_seed(0))
    >>> m.type_of(x).tolist()
    [[1, 1, 2, 3]]
    """
    #: aliases per type (vocab,), at least 1
    k: np.ndarray
    #: the first extra row of each type, counted from ``vocab`` (types with k = 1: unused)
    offset: np.ndarray

    @classmethod
    def from_counts(cls, k) -> "AliasMap":
        """The map of alias counts ``k`` (one per type, each at least 1)."""
        k = np.asarray(k)
        if k.ndim != 1 or k.size == 0 or not np.issubdtype(k.dtype, np.integer) or np.any(k < 1):
            raise ParameterError(f"k (shape {k.shape}, dtype {k.dtype}) is out of range: valid range is a "
                                 "1-D integer array of alias counts, each at least 1 (alias_counts).")
        k = k.astype(np.int64)
        extra = k - 1
        offset = np.concatenate([[0], np.cumsum(extra)[:-1]]).astype(np.int64)
        return cls(k=k, offset=offset)

    @property
    def vocab(self) -> int:
        """The number of types (the tokenizer's vocabulary)."""
        return int(self.k.size)

    @property
    def n_inputs(self) -> int:
        """Rows of the input embedding: the vocabulary plus every type's extra aliases."""
        return int(self.k.sum())

    @property
    def aliased_types(self) -> np.ndarray:
        """The ids of the types with more than one alias."""
        return np.flatnonzero(self.k > 1)

    def aliases(self, w: int) -> list[int]:
        """Type ``w``'s alias ids, its own id first."""
        w = check_int("w", w, lo=0, hi=self.vocab - 1)
        first = self.vocab + int(self.offset[w])
        return [w, *range(first, first + int(self.k[w]) - 1)]

    def alias_id(self, types, j):
        """The ``j``-th alias of each type in ``types`` (``j`` taken modulo the type's ``k``; 0 is the type)."""
        types = np.asarray(types, np.int64)
        j = np.asarray(j, np.int64) % self.k[types]
        return np.where(j == 0, types, self.vocab + self.offset[types] + j - 1)

    def type_of(self, ids) -> np.ndarray:
        """The type of every input id (an alias's type; a type's own id is itself)."""
        ids = np.asarray(ids, np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_inputs):
            raise ParameterError(f"ids span [{ids.min()}, {ids.max()}], out of range: valid range is "
                                 f"[0, {self.n_inputs - 1}] (the map's input ids).")
        owner = np.repeat(np.arange(self.vocab, dtype=np.int64), self.k - 1)
        return np.where(ids < self.vocab, ids, owner[np.clip(ids - self.vocab, 0, max(owner.size - 1, 0))]
                        if owner.size else ids)

    def apply(self, ids, generator):
        """Each id of ``ids`` (a LongTensor of types) replaced by one of its aliases, uniformly and
        independently per occurrence; ids of types with ``k = 1`` are left as they are.

        ``generator`` is a ``torch.Generator``: one uniform draw per element, so the draws are a
        function of the generator's state and the tensor's shape alone.
        """
        import torch

        ids = torch.as_tensor(ids, dtype=torch.long)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab):
            raise ParameterError(f"ids span [{int(ids.min())}, {int(ids.max())}], out of range: valid range is "
                                 f"[0, {self.vocab - 1}] (type ids; alias the uncorrupted text).")
        u = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
        k = torch.as_tensor(self.k)[ids]
        j = torch.clamp((u * k).long(), max=k - 1)
        alias = torch.as_tensor(self.vocab + self.offset)[ids] + j - 1
        return torch.where(j == 0, ids, alias)


#: the convergence measurement follows at most this many aliased types: the most frequent
#: in the measured text ...
CONVERGENCE_TYPES = 8
#: ... each through at most this many of its aliases (its own id and the first new rows) ...
CONVERGENCE_ALIASES = 4
#: ... with at least this many occurrences in the text (position 0 and corrupted inputs left out)
CONVERGENCE_MIN_COUNT = 4


def convergence_targets(aliases: AliasMap, types, measured, n_types: int = CONVERGENCE_TYPES,
                        min_count: int = CONVERGENCE_MIN_COUNT) -> np.ndarray:
    """The types :func:`alias_convergence` follows: those with at least two aliases and
    ``min_count`` measured occurrences, the ``n_types`` most frequent in the text (ties by id).

    >>> m = AliasMap.from_counts([1, 3, 2, 1])
    >>> t = np.array([1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3])
    >>> convergence_targets(m, t, np.ones(t.size, bool), n_types=5, min_count=4).tolist()
    [2, 1]
    """
    types = np.asarray(types, np.int64).ravel()
    measured = np.asarray(measured, bool).ravel()
    counts = np.bincount(types[measured], minlength=aliases.vocab)
    ok = np.flatnonzero((aliases.k > 1) & (counts >= int(min_count)))
    order = sorted(ok.tolist(), key=lambda w: (-int(counts[w]), w))
    return np.asarray(order[:int(n_types)], np.int64)


def alias_convergence(model, modules, batch: dict, aliases: AliasMap, seq_len: int,
                      n_types: int = CONVERGENCE_TYPES, n_aliases: int = CONVERGENCE_ALIASES,
                      min_count: int = CONVERGENCE_MIN_COUNT, n_special: int = N_SPECIAL) -> list[dict]:
    """Do a type's aliases converge? Their centroids' spread against the type's radius, contexts fixed.

    The batch (an aliased batch: ``input_ids``, ``types``, ``aliased``, as
    :func:`tanbias.lab.data.alias_batch` makes them) is shown ``n_aliases`` times. In
    showing ``j`` every *measured* occurrence of a followed type ``w``
    (:func:`convergence_targets`: not position 0 of a row, not an encoder's corrupted
    input) is its ``j``-th alias (``j < k_w``: ``w`` itself, then its first new rows); every
    other position is shown as the batch shows it. At each layer ``l >= 1`` (``modules``:
    the embedding and the blocks, :func:`tanbias.lab.probe.residual_modules`) and for
    each followed type, with ``X_j`` its ``n`` occurrences' activations in showing ``j``
    and ``C_j`` their centroid:

    * ``within``: the type's radius, ``sqrt(mean_j mean_i |X_j[i] - C_j|²)``;
    * ``between``: the spread of its aliases' centroids, ``sqrt(mean_j |C_j - mean_j C_j|²)``;
    * ``ratio = between / within``: near 0 when the aliases are one cloud (the model reads
      them alike), of order 1 or more when each alias keeps a cloud of its own.

    The contexts are the same in every showing, so ``between`` is not inflated by
    sampling different contexts: it is what the alias identity alone moves. Layer 0 (the
    embedding, context-free) has no radius and is left out. Forward passes only, in eval
    mode; the model's mode is restored.

    Returns
    -------
    list of dict
        One per (layer, type): ``layer, type_id, k, shown`` (aliases compared), ``n``,
        ``between``, ``within``, ``ratio``.
    """
    import torch

    n_aliases = check_int("n_aliases", n_aliases, lo=2)
    ids = batch["input_ids"]
    types = batch["types"]
    shown = ids == batch["aliased"]
    pos = torch.arange(ids.numel()).reshape(ids.shape) % int(seq_len)
    measured = (shown & (pos != 0) & (types >= n_special)).numpy()
    targets = convergence_targets(aliases, types.numpy(), measured, n_types, min_count)
    if targets.size == 0:
        return []
    tnp = types.numpy()
    is_target = measured & np.isin(tnp, targets)
    flat_types = tnp[is_target]
    worlds = int(min(n_aliases, int(aliases.k[targets].max())))
    store: dict[int, list] = {}

    def hook(i):
        def h(module, inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            store[i] = out.detach().float()
        return h

    handles = [m.register_forward_hook(hook(i)) for i, m in enumerate(modules)]
    was_training = model.training
    model.eval()
    acts: list[list[np.ndarray]] = []          # [world][layer] -> (n_target_positions, D)
    dev = next(model.parameters()).device
    try:
        with torch.no_grad():
            for j in range(worlds):
                x = ids.clone()
                # types with fewer than j + 1 aliases keep the batch's own showing in this world
                alias_j = aliases.alias_id(flat_types, np.minimum(j, aliases.k[flat_types] - 1))
                x[torch.as_tensor(is_target)] = torch.as_tensor(alias_j, dtype=torch.long)
                store.clear()
                model(input_ids=x.to(dev))
                acts.append([store[i].reshape(-1, store[i].shape[-1])[torch.as_tensor(is_target.ravel())]
                             .cpu().double().numpy() for i in range(len(modules))])
    finally:
        for hd in handles:
            hd.remove()
        model.train(was_training)
    rows = []
    for w in targets.tolist():
        sel = flat_types == w
        m = int(min(worlds, aliases.k[w]))
        for layer in range(1, len(modules)):
            X = np.stack([acts[j][layer][sel] for j in range(m)])       # (m, n, D)
            C = X.mean(axis=1)                                           # (m, D)
            within = float(np.sqrt(np.mean(np.sum((X - C[:, None]) ** 2, axis=2))))
            between = float(np.sqrt(np.mean(np.sum((C - C.mean(axis=0)) ** 2, axis=1))))
            rows.append({"layer": layer, "type_id": int(w), "k": int(aliases.k[w]), "shown": m,
                         "n": int(sel.sum()), "between": between, "within": within,
                         "ratio": between / within if within > 0 else float("nan")})
    return rows


class AliasingHook(Hook):
    """What an aliased run adds to the training loop.

    * link 0 of the knob: every step counts the input ids its batch is shown as
      (``input_counts``, kept in the checkpoint under ``"input_counts"`` and written to
      ``input_counts.npy``);
    * on rank 0, at every probe step and after the last step: :func:`alias_convergence`
      on the first batch of the common held-out text (:meth:`tanbias.lab.data.Stream.common`),
      logged as a record ``{"type": "alias", "step", "rows"}`` in ``metrics.jsonl`` (a
      resumed run does not measure a step twice) and, at the end, every record's rows in
      ``alias.csv`` (one row per step, layer and followed type).

    Parameters
    ----------
    run : tanbias.lab.train.TrainingRun
        Its stream's alias map (``run.stream.aliases``) is the map counted and measured.
    """

    checkpoint_key = "input_counts"

    def __init__(self, run):
        self.aliases = run.stream.aliases
        self.input_counts = np.zeros(self.aliases.n_inputs, np.int64)
        self.batch = run.stream.common(1)[0] if run.ctx.main else None
        self.measured = run.logged_steps("alias")

    @classmethod
    def for_run(cls, run) -> "AliasingHook | None":
        """The hook of an aliased run; None when its stream has no alias map."""
        return cls(run) if run.stream.aliases is not None else None

    def before_step(self, run, step: int, batch: dict) -> None:
        self.input_counts += np.bincount(batch["aliased"].reshape(-1).numpy(), minlength=self.aliases.n_inputs)

    def at_probe_step(self, run, step: int) -> None:
        if step in self.measured:
            return
        rows = alias_convergence(run.model, run.modules, run.to_device(self.batch), self.aliases,
                                 run.cfg.size.seq_len)
        run.log({"type": "alias", "step": step, "rows": rows})
        self.measured.add(step)

    def state_dict(self) -> np.ndarray:
        return self.input_counts

    def load_state_dict(self, state) -> None:
        self.input_counts = state

    def write(self, run) -> dict:
        import pandas as pd

        runs.atomic_save_npy(run.dir / "input_counts.npy", self.input_counts)
        conv = [{"run": run.cfg.name, "step": r["step"], **row} for r in runs.read_jsonl(run.log_path)
                if r.get("type") == "alias" for row in r["rows"]]
        cols = ["run", "step", "layer", "type_id", "k", "shown", "n", "between", "within", "ratio"]
        runs.atomic_write_text(run.dir / "alias.csv", pd.DataFrame(conv, columns=cols).sort_values(
            ["step", "type_id", "layer"]).to_csv(index=False, float_format="%.6g"))
        return {}
