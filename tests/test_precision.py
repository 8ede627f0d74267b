"""Precisions of the lab (models, train): clear errors for bad values, bf16 agreeing with fp32 (its
devices: test_devices.py).

The tolerances: on a smoke run of 24 steps the bfloat16 run's per-step loss
stays within 0.05 nats of the float32 run's (mean absolute difference within
0.02), and its late log enrichment (frozen proxy, mean over layers) within 0.25
of it — bfloat16 keeps 8 bits of mantissa, so each step's loss moves by about
1e-2, and the alignment tables, computed from float32 captures of slightly
different weights, move with it.
"""
from __future__ import annotations


import numpy as np
import pytest
import torch

from tanbias.errors import ParameterError
from tanbias.lab import runs
from tanbias.lab.analysis import sweep
from tanbias.lab.config import RunConfig
from tanbias.lab.models import autocast, gemm_peak
from tanbias.lab.pipeline import train_and_analyse

SMOKE = {"kind": "decoder", "size": "smoke", "steps": 24, "languages": ["en"], "checkpoint_every": 12,
         "eval_batches": 1, "probe": {"n_steps": 4, "tokens": 128, "rank": 4, "local_rank": 2, "min_count": 4}}


def test_bad_precision_names_the_option_and_the_values():
    with pytest.raises(ParameterError, match=r"precision='fp8' is not allowed: valid range is \{'fp32', 'bf16'\}"):
        RunConfig.from_dict({**SMOKE, "name": "x", "precision": "fp8"})
    with pytest.raises(ParameterError, match="precision='fp8'"):
        autocast("cpu", "fp8")
    with pytest.raises(ParameterError, match="dtype='fp8'"):
        gemm_peak(64, dtype="fp8")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("prec")
    out = {}
    for prec in ("fp32", "bf16"):
        cfg = {**SMOKE, "name": f"p-{prec}", "precision": prec}
        train_and_analyse(cfg, out_dir=root / prec, fresh=True, progress=False, device="cpu")
        out[prec] = runs.load_run(root / prec)
    return out


@pytest.mark.slow
def test_bf16_loss_curve_agrees_with_fp32(both):
    a = both["fp32"].metrics["loss"].to_numpy()
    b = both["bf16"].metrics["loss"].to_numpy()
    assert len(a) == len(b) == SMOKE["steps"]
    assert np.max(np.abs(a - b)) < 0.05 and np.mean(np.abs(a - b)) < 0.02
    assert not np.array_equal(a, b)               # bf16 did run in bfloat16


def test_bf16_alignment_tables_agree_with_fp32(both):
    late = {}
    for prec, r in both.items():
        m = sweep.run_metrics({r.name: r})
        m = m[(m["layer"] == "mean") & (m["bucket"] == "all") & (m["proxy"] == "frozen") & (m["phase"] == "late")]
        late[prec] = float(m["log_enrichment"].iloc[0])
    assert abs(late["bf16"] - late["fp32"]) < 0.25, late


def test_manifest_and_summary_record_device_and_precision(both):
    for prec, r in both.items():
        assert r.summary["device"] == "cpu" and r.summary["precision"] == prec
        assert r.manifest["device"] == "cpu" and r.manifest["precision"] == prec
        assert r.manifest["config"]["precision"] == prec


def test_larger_sizes_have_the_stated_parameter_counts():
    from tanbias.lab.models import make_model

    for size, lo, hi in (("base", 25e6, 40e6), ("large", 100e6, 140e6)):
        with torch.device("meta"):                  # shapes only: no memory, no initialisation
            m = make_model("decoder", size, vocab_size=8192)
        n = sum(p.numel() for name, p in m.named_parameters() if "embed" not in name)
        assert lo < n < hi, (size, n)


@pytest.mark.parametrize("kind", ["decoder", "encoder"])
def test_chunked_bf16_loss_equals_the_plain_one(kind):
    """Under bf16 the output layer and loss run chunk by chunk (models.linear_cross_entropy).
    Against autocast's own path (the whole logits at once): the loss within 2e-3 of it
    relative (both round the logits to bf16, they differ only in summation order),
    the accuracy count equal up to ties, and every parameter's gradient with
    cosine similarity > 0.999 to it."""
    from tanbias.lab import models
    from tanbias.lab.train import setup_training

    cfg = RunConfig.from_dict({**SMOKE, "name": "chunked", "kind": kind, "seed": 3})
    stream, model, _, _ = setup_training(cfg)
    batch = next(stream.training())

    def run(chunked):
        model.zero_grad(set_to_none=True)
        with autocast("cpu", "bf16"):
            if chunked:
                loss, n, correct = models.loss_and_correct(model, batch)
            else:                                       # autocast's path, as fp32 runs it
                hidden = model.model(input_ids=batch["input_ids"]).last_hidden_state
                labels = batch["labels"]
                if kind == "decoder":
                    hidden, labels = hidden[:, :-1], labels[:, 1:]
                keep = labels != -100
                logits = model.lm_head(hidden[keep]).float()
                loss = torch.nn.functional.cross_entropy(logits, labels[keep], reduction="sum")
                n, correct = int(keep.sum()), int((logits.argmax(-1) == labels[keep]).sum())
        (loss / n).backward()
        return float(loss.detach()), n, correct, {k: p.grad.detach().clone() for k, p in model.named_parameters()}

    a, b = run(True), run(False)
    assert a[1] == b[1] and abs(a[0] - b[0]) <= 2e-3 * abs(b[0])
    assert abs(a[2] - b[2]) <= max(1, 0.02 * a[1])
    for k in b[3]:
        ga, gb = a[3][k].flatten(), b[3][k].flatten()
        if gb.norm() > 0:
            assert float(ga @ gb / (ga.norm() * gb.norm())) > 0.999, k


def test_chunked_loss_rejects_a_bad_chunk():
    from tanbias.lab.models import linear_cross_entropy

    with pytest.raises(ParameterError, match=r"chunk=0 is out of range: valid range is chunk >= 1"):
        linear_cross_entropy(torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(2, dtype=torch.long), chunk=0)
