"""The package's two exceptions (tanbias.errors): both are ValueErrors, a corrupt file names itself
and the command that rebuilds it, and both survive a trip between processes."""

import pickle

import pytest

from tanbias._checks import check_int
from tanbias.errors import CorruptFileError, ParameterError


def test_parameter_error_is_a_value_error():
    assert issubclass(ParameterError, ValueError)
    with pytest.raises(ValueError):
        check_int("n", 0, lo=1)


def test_corrupt_file_error_names_path_and_command():
    err = CorruptFileError("data/ckpt.npz", "make data", "sha256 mismatch")
    assert isinstance(err, ValueError)
    assert err.path == "data/ckpt.npz" and err.regenerate == "make data"
    assert "data/ckpt.npz" in str(err) and "make data" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.regenerate == "make data"


def test_a_corrupt_file_without_detail_says_no_empty_parentheses(tmp_path):
    path = tmp_path / "runs" / "x.csv"
    err = CorruptFileError(path, "python -m tanbias.lab probe x")
    assert err.path == str(path) and err.detail == ""
    assert str(err) == f"{path} is corrupt. Regenerate it with: python -m tanbias.lab probe x"


def test_both_survive_pickling_as_themselves():
    """pytest-xdist and multiprocessing hand exceptions between processes by pickling them."""
    for err in (ParameterError("t=-1 is out of range: valid range is (0, inf). Pass a positive radius."),
                CorruptFileError("a.npz", "make a", "truncated")):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err) and again.args == err.args
    again = pickle.loads(pickle.dumps(CorruptFileError("a.npz", "make a", "truncated")))
    assert (again.path, again.regenerate, again.detail) == ("a.npz", "make a", "truncated")


def test_precision_loss_is_a_parameter_error_that_survives_pickling():
    from tanbias.errors import PrecisionLossError

    err = PrecisionLossError("t=1e-09 is below the precision floor: valid range is [3.2e-07, inf). Pass a larger radius.")
    assert isinstance(err, ParameterError) and isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is PrecisionLossError and str(again) == str(err)
