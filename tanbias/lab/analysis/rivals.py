"""The rival accounts, head to head: the measurements of the rivals chapter.

This module holds what the rivals chapter measures outside the registered
experiment's statistics:

* :func:`initialisation_anisotropy`: where the encoder's mean cosine at step 0 comes
  from, before any update. The encoder and the decoder of one seed start from
  identical weights (:func:`tanbias.lab.models.make_model`), so running both on the
  encoder's own first batch separates what bidirectional attention does from what
  the weights do. At initialisation the attention logits are near 0, so attention is
  close to uniform: a bidirectional layer adds nearly the *same* vector (the mean of its
  values over the row) to every position of a row, a causal layer a running mean that
  differs from position to position. Read by position kind (content, ``<mask>``, the
  other special tokens) and within against across rows.
"""
from __future__ import annotations

import numpy as np

from tanbias.lab.config import MASK_ID, N_SPECIAL, RunConfig

__all__ = ["POSITION_KINDS", "initialisation_anisotropy"]

#: the positions :func:`initialisation_anisotropy` reads apart (position 0 of every row is left out)
POSITION_KINDS = ("content", "mask", "special")


def _residual_states(model, input_ids) -> list[np.ndarray]:
    """The residual stream after the embedding and after every block (layer 0 .. L), (B*T, D) each."""
    import torch

    from tanbias.lab.probe import residual_modules

    out, hooks = [], []
    for m in residual_modules(model):
        hooks.append(m.register_forward_hook(
            lambda mod, args, o: out.append((o[0] if isinstance(o, tuple) else o).detach())))
    try:
        with torch.no_grad():
            model.model(input_ids=input_ids)
    finally:
        for h in hooks:
            h.remove()
    return [h.reshape(-1, h.shape[-1]).double().numpy() for h in out]


def _within_across(U: np.ndarray, rows: np.ndarray) -> tuple[float, float]:
    """Exact mean cosine of unit rows ``U`` over pairs in the same row of the batch, and across rows."""
    total = U.sum(0)
    n = len(U)
    within_sum, within_pairs = 0.0, 0
    for r in np.unique(rows):
        s = U[rows == r].sum(0)
        k = int((rows == r).sum())
        within_sum += float(s @ s) - k
        within_pairs += k * (k - 1)
    all_sum = float(total @ total) - n
    across_pairs = n * (n - 1) - within_pairs
    nan = float("nan")
    return (within_sum / within_pairs if within_pairs else nan,
            (all_sum - within_sum) / across_pairs if across_pairs else nan)


def initialisation_anisotropy(config: RunConfig) -> "object":
    """Mean cosine at initialisation by layer, position kind and attention, on the run's first batch.

    Parameters
    ----------
    config : RunConfig
        An encoder run (the rivals' or the causal test's control): its seed, size and first
        training batch, masked as step 0 of the run sees it.

    Returns
    -------
    pandas.DataFrame
        One row per ``attention`` (``"bidirectional"``: the encoder as built; ``"causal"``: the
        decoder of the same seed, identical weights), ``input`` (``"masked"``: the batch as step
        0 sees it; ``"unmasked"``: the same text with every token in place), ``layer`` (0: the
        embedding) and ``positions`` (:data:`POSITION_KINDS`, by the masked batch's ids):
        ``n``, ``mean_cosine`` (exact, all pairs), ``within`` (pairs in one row of the batch)
        and ``across`` (pairs from different rows).

    Raises
    ------
    ParameterError
        ``config`` is not an encoder's.
    """
    import pandas as pd

    from tanbias._checks import check_choice
    from tanbias.lab.data import training_streams
    from tanbias.lab.models import make_model
    from tanbias.lab.tokenizer import load_tokenizer
    from tanbias.theory.anisotropy import mean_cosine

    check_choice("config.kind", config.kind, ("encoder",))
    from tanbias.lab.data import original_ids

    tok = load_tokenizer()
    batch = next(training_streams(config, tok)[0])
    ids = batch["input_ids"]
    flat = ids.reshape(-1).numpy()
    rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
    first = np.tile(np.arange(ids.shape[1]), ids.shape[0]) == 0
    kinds = {"content": (flat >= N_SPECIAL) & ~first, "mask": (flat == MASK_ID) & ~first,
             "special": (flat < N_SPECIAL) & (flat != MASK_ID) & ~first}
    inputs = {"masked": ids, "unmasked": original_ids(batch)}
    out = []
    for attention, kind in (("bidirectional", "encoder"), ("causal", "decoder")):
        model = make_model(kind, config.size, vocab_size=len(tok), seed=config.seed).eval()
        for shown, x in inputs.items():
            for layer, H in enumerate(_residual_states(model, x)):
                norms = np.linalg.norm(H, axis=1)
                for positions, keep in kinds.items():
                    keep = keep & (norms > 0)
                    if keep.sum() < 2:
                        continue
                    U = H[keep] / norms[keep, None]
                    within, across = _within_across(U, rows[keep])
                    out.append({"attention": attention, "input": shown, "layer": layer, "positions": positions,
                                "n": int(keep.sum()), "mean_cosine": mean_cosine(H[keep]),
                                "within": within, "across": across})
    return pd.DataFrame(out)
