"""Checkers of the exercise of "From tangent bias to a narrow cone", ARENA style.

Each checker runs the reader's answer on several cases, compares it with a reference computed
here, and either prints one line starting with "passed" or raises ``AssertionError`` with a
message that names the likely mistake. Malformed input (not a function, a string where a
choice is expected, a wrong shape) gets a message that says what was expected.

* :func:`check_cone_coherence`: the reader's ``coherence_from_update(update, inputs)``, the
  share of the displacements ``update @ x_k`` that is common to every token, computed from the
  update and the inputs (the identity of :mod:`tanbias.theory.cone_drift`).
* :func:`check_cone_prediction`: the reader's prediction, made before the figure, of which
  setting of the toy makes a cone and which squeezes the centred cloud; graded against the
  toy itself (:func:`tanbias.theory.cone_drift.cone_drift`), never against a stored answer.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from tanbias.theory.cone_drift import cone_drift, cone_setting, displacement_coherence, update_coherence

__all__ = ["SETTINGS", "reference_coherence", "check_cone_coherence", "reference_prediction",
           "check_cone_prediction"]

#: The three settings of the prediction: (sharing, alignment) of the toy's tangent planes.
SETTINGS = {"aligned": (1.0, 1.0), "orthogonal": (1.0, 0.0), "own": (0.0, 1.0)}

_RTOL = 1e-6


def reference_coherence(update, inputs) -> float:
    """Reference answer: ``||W m||^2 / (||W m||^2 + mean_k ||W (x_k - m)||^2)``, ``m`` the mean input.

    Example
    -------
    >>> reference_coherence(np.eye(2), np.array([[1.0, 1.0], [1.0, -1.0]]))     # m = (1, 0)
    0.5
    """
    return update_coherence(update, inputs)


def _callable(fn, name):
    if not callable(fn):
        raise AssertionError(f"{name} should be a function, the one you defined above; got "
                             f"{type(fn).__name__} ({fn!r:.60}). Pass the function itself, without "
                             f"calling it: {name}, not {name}(...).")


def _as_float(value, name):
    if hasattr(value, "item") and getattr(value, "size", None) == 1:     # numpy or torch scalars
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        shape = f" of shape {np.shape(value)}" if hasattr(value, "shape") else ""
        raise AssertionError(f"{name} should return one float, got {type(value).__name__}{shape} "
                             f"({value!r:.60}). Did you average over the wrong axis, or return a "
                             f"vector instead of its squared norm?")
    value = float(value)
    if math.isnan(value):
        raise AssertionError(f"{name} returned nan: a division of 0 by 0? Every case here has a "
                             f"non-zero update.")
    return value


def _cases():
    """(label, update, inputs): a hand case, square and rectangular updates, one token, a shared
    input that is zero, and the toy's own tokens."""
    rng = np.random.default_rng(7)
    cases = [("two tokens, identity update, inputs (2, 1) and (2, -1)",
              np.eye(2), np.array([[2.0, 1.0], [2.0, -1.0]]))]
    x = rng.standard_normal((40, 5)) + np.array([2.0, 0.0, 0.0, 0.0, 0.0])
    cases.append(("a square update of 5 x 5, 40 tokens with a shared input", rng.standard_normal((5, 5)), x))
    cases.append(("a rectangular update of 3 x 5, same tokens", rng.standard_normal((3, 5)), x))
    z = rng.standard_normal((20, 4))
    cases.append(("no shared input (the inputs average to zero exactly)", rng.standard_normal((4, 4)),
                  z - z.mean(axis=0)))
    cases.append(("a single token (edge case: everything it does is shared)", rng.standard_normal((3, 5)), x[:1]))
    s = cone_setting(1.0, 1.0, n_tokens=60, D=12, seed=1)
    T = s["tangent"]
    projected = np.einsum("kab,kb->ka", T, np.einsum("kba,kb->ka", T, s["x"]))
    cases.append(("the toy's tangent-projected update, 60 tokens", s["delta"].T @ projected, s["x"]))
    return cases


def _mistakes(W, x, expected):
    m = x.mean(axis=0)
    common = float(np.sum((W @ m) ** 2))
    specific = float(np.mean(np.sum(((x - m) @ W.T) ** 2, axis=1)))
    uncentred = float(np.mean(np.sum((x @ W.T) ** 2, axis=1)))
    spec_norm = float(np.mean(np.linalg.norm((x - m) @ W.T, axis=1)))
    per_token = np.sum((x @ W.T) ** 2, axis=1)
    out = [(common / (common + uncentred) if common + uncentred else None,
            "The token-specific part is W z_k with z_k = x_k - m, the input minus the shared mean: "
            "you used W x_k, which counts the shared part twice."),
           (math.sqrt(common) / (math.sqrt(common) + spec_norm) if common + spec_norm else None,
            "Square the norms: the coherence compares mean squares, ||W m||^2 against "
            "mean_k ||W z_k||^2 (that is what makes the two parts add up)."),
           (common / specific if specific else None,
            "You returned common / specific; the coherence is common / (common + specific), a share "
            "between 0 and 1."),
           (1.0 - expected,
            "You returned the token-specific share, 1 - C; the coherence is the common share."),
           (float(np.mean(common / per_token)) if np.all(per_token > 0) else None,
            "You averaged a ratio per token; the coherence is a ratio of averages: "
            "||mean_k W x_k||^2 / mean_k ||W x_k||^2.")]
    if W.shape[0] == W.shape[1]:
        out.append((update_coherence(W.T, x),
                    "The update acts on the inputs as W x_k (inputs @ W.T for rows); you applied its "
                    "transpose."))
    return out


def check_cone_coherence(fn) -> None:
    """Check the reader's ``coherence_from_update(update, inputs) -> float``.

    It must return ``||W m||^2 / (||W m||^2 + mean_k ||W (x_k - m)||^2)`` with ``m`` the mean of
    the rows of ``inputs``: the share of the displacements ``W x_k`` that every token shares.

    Raises
    ------
    AssertionError
        Not a function; not a float; or a wrong value, with the likely mistake (no centring,
        norms not squared, common / specific, the specific share, a mean of ratios, the
        transposed update).

    Example
    -------
    >>> check_cone_coherence(reference_coherence)
    passed: the coherence matches on 6 cases, and equals the common share of the displacements themselves.
    """
    _callable(fn, "coherence_from_update")
    cases = _cases()
    for label, W, x in cases:
        expected = reference_coherence(W, x)
        try:
            got = fn(W.copy(), x.copy())
        except NotImplementedError:
            raise AssertionError("coherence_from_update still raises NotImplementedError: write your "
                                 "code in its body, then run this cell again.") from None
        except Exception as err:
            raise AssertionError(f"coherence_from_update raised {type(err).__name__} on the case {label}: "
                                 f"{err}") from err
        got = _as_float(got, "coherence_from_update")
        if abs(got - expected) <= _RTOL * max(1.0, abs(expected)):
            continue
        for value, message in _mistakes(W, x, expected):
            if value is not None and abs(got - value) <= 1e-6 * max(1.0, abs(value)):
                raise AssertionError(f"{message} (case: {label}; expected {expected:.6g}, got {got:.6g})")
        raise AssertionError(f"Wrong value (case: {label}): expected {expected:.6g}, got {got:.6g}. "
                             f"Compute m = inputs.mean(axis=0), then ||W m||^2 and the mean over "
                             f"tokens of ||W (x_k - m)||^2.")
    W, x = cases[1][1], cases[1][2]
    assert math.isclose(reference_coherence(W, x), displacement_coherence(x @ W.T), rel_tol=1e-12)
    print(f"passed: the coherence matches on {len(cases)} cases, and equals the common share of the "
          f"displacements themselves.")


def reference_prediction() -> dict:
    """The answer the mechanism gives before any figure (the chapter's solution says why).

    Example
    -------
    >>> reference_prediction()
    {'cone': 'aligned', 'squeezed': 'orthogonal'}
    """
    return {"cone": "aligned", "squeezed": "orthogonal"}


def _toy_outcomes() -> dict:
    """The toy's outcome in each setting: the mean cosine it ends with and its last
    participation ratio (the centred cloud's effective dimensions)."""
    out = {}
    for name, (sharing, alignment) in SETTINGS.items():
        t = cone_drift(sharing, alignment, sizes=[0.0, 3.0])["tangent"]
        out[name] = dict(mean_cosine=float(t["mean_cosine"][-1]), participation=float(t["participation"][-1]))
    return out


_WHY = {
    ("cone", "orthogonal"): "A shared plane that misses the shared input reads only what tokens do not "
                            "share: W m is nearly 0, so there is no common move and no cone.",
    ("cone", "own"): "Planes of their own read a little of the shared input each, but every token's "
                     "update also reads its own directions: the moves are somewhat more common than a "
                     "plain gradient's, far less common than where one shared plane contains the "
                     "shared input.",
    ("squeezed", "aligned"): "The aligned plane squeezes the centred cloud too: what each token does not "
                             "share is also read through the plane's few directions. But those moves are "
                             "small, since the moves are mostly shared. The orthogonal plane puts the "
                             "whole move into those few directions.",
    ("squeezed", "own"): "With planes of their own the update has as many input directions as tokens: "
                         "its output is not confined to a few directions.",
}


def check_cone_prediction(prediction) -> None:
    """Check the reader's ``prediction``: a dict with keys ``"cone"`` (the setting whose hidden states
    end with the largest mean cosine) and ``"squeezed"`` (the setting whose centred cloud ends with
    the fewest effective dimensions), each one of ``"aligned"``, ``"orthogonal"``, ``"own"``
    (:data:`SETTINGS`). The right answers are read from the toy, run here.

    Raises
    ------
    AssertionError
        Not a dict with those two keys and those values; or a wrong setting, with what the toy shows
        and why.

    Example
    -------
    >>> check_cone_prediction({"cone": "aligned", "squeezed": "orthogonal"})
    passed: the largest mean cosine is the aligned setting's (0.86), the fewest dimensions the orthogonal setting's (2.4).
    """
    choices = tuple(SETTINGS)
    if not isinstance(prediction, dict):
        raise AssertionError(f"prediction should be a dict such as {{'cone': 'aligned', 'squeezed': 'own'}}, "
                             f"got {type(prediction).__name__} ({prediction!r:.60}).")
    if set(prediction) != {"cone", "squeezed"}:
        raise AssertionError(f"prediction should have exactly the keys 'cone' and 'squeezed', got "
                             f"{sorted(map(str, prediction))}.")
    for key, value in prediction.items():
        if value is None:
            raise AssertionError(f"prediction[{key!r}] is still None: set your prediction first, one of "
                                 f"{choices}. Nothing has been checked yet.")
        if not isinstance(value, str) or value not in choices:
            raise AssertionError(f"prediction[{key!r}] must be one of {choices} (a string), got {value!r}.")
    toy = _toy_outcomes()
    truth = {"cone": max(toy, key=lambda k: toy[k]["mean_cosine"]),
             "squeezed": min(toy, key=lambda k: toy[k]["participation"])}
    for key in ("cone", "squeezed"):
        if prediction[key] != truth[key]:
            shown = ", ".join(f"{k}: mean cosine {v['mean_cosine']:.2f}, {v['participation']:.1f} dimensions"
                              for k, v in toy.items())
            raise AssertionError(f"Not {prediction[key]!r} for {key!r}. "
                                 f"{_WHY.get((key, prediction[key]), '')} The toy gives: {shown}.")
    print(f"passed: the largest mean cosine is the {truth['cone']} setting's "
          f"({toy[truth['cone']]['mean_cosine']:.2f}), the fewest dimensions the {truth['squeezed']} "
          f"setting's ({toy[truth['squeezed']]['participation']:.1f}).")
