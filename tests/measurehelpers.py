"""Measurements of tiny random models that the measurement command's figure and report tests share
(``test_measure_figures.py``, ``test_report_figures.py``)."""
from __future__ import annotations

from tanbias.lab.analysis import measure as ms
from tanbias.lab.analysis.measure_folder import load_measurement
from tanbias.lab.analysis.measure_inputs import MIN_TOKENS
from tiny_checkpoints import make_tiny_checkpoint

#: the smallest measurement that reaches every table: one language, MIN_TOKENS tokens, few draws
#: and resamples, the alignment test on one row of each half with two random controls
SMALL = dict(n_tokens=MIN_TOKENS, draws=2, n_boot=10, robust_m=(8,), probe_tokens=256,
             probe={"n_controls": 2}, frequency_docs=500)


def measure_tiny(root):
    """``{"series": tables, "one": tables}``: a tiny Llama at three checkpoints, a tiny bare BERT."""
    series = make_tiny_checkpoint("llama", root / "llama", revisions=("step0", "step1", "step2"))
    ms.measure_model(series, root / "out-series", progress=False, **SMALL)
    one = make_tiny_checkpoint("bert", root / "bert", revisions=("step0",), head=False) / "step0"
    ms.measure_model(one, root / "out-one", progress=False, **SMALL)
    return {"series": load_measurement(root / "out-series"), "one": load_measurement(root / "out-one")}
