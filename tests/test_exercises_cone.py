"""The cone chapter's checkers (tanbias.book.exercises_cone): the right answer passes, each typical
mistake fails with its own message, malformed input fails with a message that says what was
expected, and no hard-coded number passes."""

import numpy as np
import pytest

from tanbias.book.exercises_cone import (SETTINGS, _toy_outcomes, check_cone_coherence, check_cone_prediction,
                                         reference_coherence, reference_prediction)


def test_the_reference_coherence_passes(capsys):
    check_cone_coherence(reference_coherence)
    assert capsys.readouterr().out.startswith("passed: the coherence matches on 6 cases")


def _centred(W, x):
    return x - x.mean(axis=0)


MISTAKES = {
    "no centring": (lambda W, x: float(np.sum((W @ x.mean(0)) ** 2) / (np.sum((W @ x.mean(0)) ** 2)
                                                                      + np.mean(np.sum((x @ W.T) ** 2, 1)))),
                    "you used W x_k"),
    "norms not squared": (lambda W, x: float(np.linalg.norm(W @ x.mean(0)) / (np.linalg.norm(W @ x.mean(0))
                                              + np.mean(np.linalg.norm(_centred(W, x) @ W.T, axis=1)))),
                          "Square the norms"),
    "common over specific": (lambda W, x: float(np.sum((W @ x.mean(0)) ** 2)
                                                / np.mean(np.sum((_centred(W, x) @ W.T) ** 2, 1))),
                             "common / specific"),
    "the specific share": (lambda W, x: 1.0 - reference_coherence(W, x), "1 - C"),
    "a mean of ratios": (lambda W, x: float(np.mean(np.sum((W @ x.mean(0)) ** 2) / np.sum((x @ W.T) ** 2, 1))),
                         "ratio of averages"),
    "the transposed update": (lambda W, x: reference_coherence(W.T, x) if W.shape[0] == W.shape[1]
                              else reference_coherence(W, x), "transpose"),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_each_mistake_gets_its_own_message(name):
    fn, words = MISTAKES[name]
    with pytest.raises(AssertionError, match=words) as exc:
        check_cone_coherence(fn)
    for other, (_, other_words) in MISTAKES.items():
        if other != name:
            assert other_words not in str(exc.value), (name, other)


def test_a_hard_coded_number_does_not_pass():
    for value in (0.5, 0.0, 1.0, reference_coherence(np.eye(2), np.array([[1.0, 1.0], [1.0, -1.0]]))):
        with pytest.raises(AssertionError, match="Wrong value|1 - C"):
            check_cone_coherence(lambda W, x, v=value: v)


def test_malformed_answers_get_a_message_that_says_what_was_expected():
    with pytest.raises(AssertionError, match="should be a function.*not coherence_from_update\\(...\\)"):
        check_cone_coherence(0.5)
    with pytest.raises(AssertionError, match="should return one float, got ndarray of shape \\(2,\\)"):
        check_cone_coherence(lambda W, x: (x @ W.T).mean(axis=0)[:2])
    with pytest.raises(AssertionError, match="should return one float, got str"):
        check_cone_coherence(lambda W, x: "0.5")
    with pytest.raises(AssertionError, match="should return one float, got bool"):
        check_cone_coherence(lambda W, x: True)
    with pytest.raises(AssertionError, match="returned nan"):
        check_cone_coherence(lambda W, x: float("nan"))

    def stub(W, x):
        raise NotImplementedError
    with pytest.raises(AssertionError, match="still raises NotImplementedError"):
        check_cone_coherence(stub)

    def singular(W, x):
        raise np.linalg.LinAlgError("Singular matrix")
    with pytest.raises(AssertionError, match="raised LinAlgError on the case .*Singular matrix"):
        check_cone_coherence(singular)


def test_the_aligned_message_is_true_the_aligned_setting_squeezes_too():
    from tanbias.theory.cone_drift import cone_drift
    start = cone_drift(1.0, 1.0, sizes=[0.0, 3.0])["tangent"]["participation"][0]
    toy = _toy_outcomes()
    assert toy["aligned"]["participation"] < start / 2           # squeezed, though less than orthogonal
    assert toy["orthogonal"]["participation"] < toy["aligned"]["participation"]


def test_numpy_scalars_are_accepted(capsys):
    check_cone_coherence(lambda W, x: np.float32(reference_coherence(W, x)))
    assert "passed" in capsys.readouterr().out


def test_the_prediction_is_graded_against_the_toy(capsys):
    check_cone_prediction(reference_prediction())
    assert capsys.readouterr().out.startswith("passed: the largest mean cosine is the aligned setting's")
    with pytest.raises(AssertionError, match="Not 'orthogonal' for 'cone'.*misses the shared input.*The toy gives"):
        check_cone_prediction({"cone": "orthogonal", "squeezed": "orthogonal"})
    with pytest.raises(AssertionError, match="Not 'own' for 'cone'"):
        check_cone_prediction({"cone": "own", "squeezed": "orthogonal"})
    with pytest.raises(AssertionError, match="Not 'aligned' for 'squeezed'.*squeezes the centred cloud too"):
        check_cone_prediction({"cone": "aligned", "squeezed": "aligned"})
    with pytest.raises(AssertionError, match="Not 'own' for 'squeezed'"):
        check_cone_prediction({"cone": "aligned", "squeezed": "own"})


def test_a_malformed_prediction_says_what_was_expected():
    with pytest.raises(AssertionError, match="should be a dict"):
        check_cone_prediction("aligned")
    with pytest.raises(AssertionError, match="exactly the keys 'cone' and 'squeezed'"):
        check_cone_prediction({"cone": "aligned"})
    with pytest.raises(AssertionError, match=r"must be one of \('aligned', 'orthogonal', 'own'\)"):
        check_cone_prediction({"cone": "Aligned", "squeezed": "orthogonal"})
    with pytest.raises(AssertionError, match="must be one of"):
        check_cone_prediction({"cone": 1, "squeezed": "orthogonal"})
    assert set(SETTINGS) == {"aligned", "orthogonal", "own"}
    with pytest.raises(AssertionError, match=r"prediction\['cone'\] is still None: set your prediction first"):
        check_cone_prediction({"cone": None, "squeezed": None})
