"""Where a measurement is kept (tanbias.lab.analysis.measure_folder): written whole or not at all, read
back with its checksums and chapter 9's results, split into its checkpoints; the measurements the
book reads, each what its command line writes."""
from __future__ import annotations

from pathlib import Path

import pytest

from tanbias.errors import CorruptFileError, ParameterError
from tanbias.lab.analysis import measure as ms
from tanbias.lab.analysis import measure_folder as mf
from tanbias.lab.analysis.pretrained_report import Results
from measurehelpers import SMALL
from tiny_checkpoints import make_tiny_checkpoint


@pytest.fixture(autouse=True)
def _no_gemm_peak(monkeypatch):
    """The manifest's matrix-multiply rate takes a second of two shared cores: not measured here."""
    import tanbias.lab.models

    monkeypatch.setattr(tanbias.lab.models, "gemm_peak", lambda **kwargs: 1e10)


@pytest.mark.slow
def test_a_tampered_table_names_the_command(tmp_path):
    path = make_tiny_checkpoint("llama", tmp_path / "model", revisions=("step0",)) / "step0"
    ms.measure_model(path, tmp_path / "out", alignment=False, progress=False, **SMALL)
    with open(tmp_path / "out" / "curvature.csv", "a") as f:
        f.write("en,9,0,0,0,0,0\n")
    with pytest.raises(CorruptFileError, match=r"curvature\.csv.*python -m tanbias measure"):
        mf.load_measurement(tmp_path / "out")


@pytest.mark.parametrize("name", sorted(p.parent.relative_to(mf.MEASURED_DIR).as_posix()
                                         for p in mf.MEASURED_DIR.rglob("manifest.json")))
def test_a_committed_measurement_is_what_its_command_line_writes(name):
    """A measurement the book reads (data/measure/, and the token counts under tokens/): its tables
    pass their checksums, its README quotes the command line its manifest records, and that command
    line gives the settings the manifest holds (what running it again would measure)."""
    import shlex

    from tanbias.lab.analysis.pretrained import MeasureSettings
    from tanbias.lab.measure_command import parser, settings_of

    tables = mf.load_measurement(mf.MEASURED_DIR / name)
    man = tables["manifest"]
    assert man["command"] == mf.COMMAND and Path(name).name.startswith(Path(man["model"]).name)   # a hub name or a folder
    # every reading of the command; those measured before the participation ratio was one lack it alone
    assert set(ms.rival_anisotropy.MEASURE_READINGS) - set(tables["anisotropy"]) <= {"participation_ratio"}
    assert man["command_line"] in (mf.MEASURED_DIR / "README.md").read_text(encoding="utf8")
    argv = shlex.split(man["command_line"])
    assert argv[:len(mf.COMMAND.split())] == mf.COMMAND.split()
    args = parser().parse_args(argv[len(mf.COMMAND.split()):])
    assert args.model == man["model"] and args.out.rstrip("/").endswith(f"data/measure/{name}")
    assert settings_of(man["command_line"]) == MeasureSettings.from_dict(man["settings"])
    assert ("alignment" in man["tables"]) is not args.no_alignment


def test_a_folder_is_written_whole_or_left_as_it_was(tmp_path):
    out = tmp_path / "m"
    with pytest.raises(KeyboardInterrupt):
        with mf.staged_folder(out) as tmp:
            (tmp / "a.csv").write_text("x")
            raise KeyboardInterrupt
    assert not out.exists() and list(tmp_path.iterdir()) == []
    with mf.staged_folder(out) as tmp:
        (tmp / "a.csv").write_text("x")
    assert (out / "a.csv").read_text() == "x"
    with pytest.raises(ParameterError, match="holds other files"):
        mf.check_out(out)


def test_a_measurement_is_read_with_chapter_9s_results_of_its_last_checkpoint(measured_tiny):
    series = measured_tiny["series"]
    assert isinstance(series["results"], Results) and list(series["results"].models["model"]) == ["step2"]
    assert "results" not in mf.split_revisions(measured_tiny["one"])[next(iter(mf.split_revisions(measured_tiny["one"])))]
    assert set(mf.split_revisions(series)) == {"step0", "step1", "step2"}
