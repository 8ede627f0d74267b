"""The command line of the measurement (tanbias.lab.measure_command), end to end on a tiny random
model: ``tanbias measure`` writes the tables, the manifest (with the command line that asked for
it) and the report page, and a bad input gets a one-line error with nothing written. What it
measures is tested in ``test_measure.py``."""
from __future__ import annotations

import json
import subprocess
import sys
import pytest

from tanbias.lab import measure_command as mc
from tanbias.lab.analysis import measure_folder as mf
from tanbias.lab.analysis import measure_inputs as inputs
from tanbias.lab.analysis.pretrained import MeasureSettings
from tiny_checkpoints import make_tiny_checkpoint


def _leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".partial-" in p.name or ".old-" in p.name)


@pytest.mark.slow
def test_the_command_line_writes_tables_manifest_and_report(tmp_path, capsys, monkeypatch):
    """``tanbias measure`` through the package face: the command's folder, its report page
    (plotly inlined, nothing fetched) and the command line in the manifest."""
    import tanbias.lab.models
    from tanbias.__main__ import main

    monkeypatch.setattr(tanbias.lab.models, "gemm_peak", lambda **kwargs: 1e10)   # a second of two cores
    path = make_tiny_checkpoint("qwen2", tmp_path / "model", revisions=("step0",)) / "step0"
    out = tmp_path / "out"
    argv = ["measure", str(path), "--tokens", str(inputs.MIN_TOKENS), "--out", str(out), "--no-progress"]
    rc = main(argv)
    assert rc == 0, capsys.readouterr().err
    assert "report.html" in capsys.readouterr().out
    man = json.loads((out / "manifest.json").read_text())
    assert man["command"] == mf.COMMAND and man["report"] == "report.html"
    assert man["command_line"] == " ".join(["python", "-m", "tanbias", *argv])
    assert set(man["tables"]) == {"types", "premise", "anisotropy", "curvature", "alignment", "spectrum"}
    assert set(mf.load_measurement(out)) == {"manifest", "results", *man["tables"]}   # checksums verified
    page = (out / "report.html").read_text()
    assert "Plotly.newPlot" in page and "<script src=" not in page      # plotly inlined, nothing fetched
    assert man["command_line"] in page
    # measured again into the same folder: replaced whole, once the new one is complete
    assert main(["measure", str(path), "--tokens", str(inputs.MIN_TOKENS), "--out", str(out), "--no-progress",
                 "--no-alignment"]) == 0
    assert "alignment" not in json.loads((out / "manifest.json").read_text())["tables"]
    assert not (out / "alignment.csv").exists() and _leftovers(tmp_path) == []


@pytest.mark.slow
def test_without_a_report_the_lab_writes_tables_and_manifest(tmp_path, capsys, monkeypatch):
    """No report builder (the lab's command alone), or ``--no-report``: the tables and the manifest."""
    import tanbias.lab.models
    from tanbias.figures.report import report_html

    monkeypatch.setattr(tanbias.lab.models, "gemm_peak", lambda **kwargs: 1e10)
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    assert mc.main([str(path), "--tokens", str(inputs.MIN_TOKENS), "--out", str(tmp_path / "out"), "--no-progress",
                    "--no-alignment", "--threads", "1", "--no-report"], report=report_html) == 0
    said = capsys.readouterr().out
    assert "tables and manifest in" in said and "report.html" not in said
    assert not (tmp_path / "out" / "report.html").exists()
    assert "report" not in json.loads((tmp_path / "out" / "manifest.json").read_text())


def test_the_command_line_reports_an_error_in_one_line(tmp_path, capsys):
    from tanbias.__main__ import main

    assert main(["measure", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and not (tmp_path / "out").exists()
    assert mc.main(["minilm-l6", "--threads", "0"]) == 2
    assert "threads=0 is out of range" in capsys.readouterr().err


def test_the_options_map_onto_the_settings():
    args = mc.parser().parse_args(["m", "--language", "de", "--tokens", "4096"])
    assert (args.language, args.tokens) == (["de"], 4096)
    s = inputs.measure_settings("m", languages=args.language, n_tokens=args.tokens)
    assert s.languages == ("de",) and s.n_tokens == 4096 and s.probe_tokens == 512
    assert str(MeasureSettings.n_tokens) in " ".join(mc.parser().format_help().split())
    assert mc.parser().parse_args(["m"]).dtype == "float32"
    assert mc.parser().parse_args(["m", "--dtype", "bfloat16"]).dtype == "bfloat16"


@pytest.mark.slow
def test_help_answers_without_loading_torch():
    code = ("import sys\nfrom tanbias.lab import measure_command\n"
            "try:\n    measure_command.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules, 'torch loaded'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--no-alignment" in proc.stdout
