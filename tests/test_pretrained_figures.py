"""Chapter 9's figures (tanbias.figures.pretrained), drawn from the committed tables of the zoo's
models: every slider names a measurement (model · language), the points drawn
are the tables' own (at most MAX_POINTS types a frame), and no figure loads a model.

(The same figures drawn from a fresh measurement: test_pretrained.py, with the zoo.)"""

from __future__ import annotations

import numpy as np
import pytest

from tanbias.figures import pretrained as fp
from tanbias.figures.interactive import Interactive
from tanbias.lab.analysis.pretrained import load_pretrained
from tanbias.lab.analysis.pretrained_report import LANGUAGE_NAMES

#: the committed measurements: two decoders (the alignment figure's slider needs two) and two encoders
MODELS = ("smollm2-135m", "gemma3-270m", "minilm-l6", "me5-small")


@pytest.fixture(scope="module")
def tables() -> dict:
    return {name: load_pretrained(name) for name in MODELS}


def test_a_measurement_is_one_model_in_one_language(tables):
    meas = fp._measurements(tables)
    expected = {(m, lang) for m, t in tables.items() for lang in set(t["anisotropy"]["language"])}
    assert set(meas.values()) == expected and len(meas) == len(expected)
    for label, (model, lang) in meas.items():
        assert label == f"{model} · {LANGUAGE_NAMES.get(lang, lang)}"


@pytest.mark.parametrize("depth, layers, layer", [("embeddings", 30, 0), ("quarter", 30, 8), ("middle", 30, 15),
                                                  ("three quarters", 6, 4), ("last", 6, 6)])
def test_a_named_depth_is_that_share_of_the_blocks(depth, layers, layer):
    assert fp._depth_layer(depth, layers) == layer


def test_the_premise_draws_each_readings_correlation_inside_its_band(tables):
    view = fp.premise_interactive(tables)
    assert isinstance(view, Interactive)
    label, (model, lang) = next(iter(fp._measurements(tables).items()))
    data = view.compute(measurement=label, estimator="matched", source="corpus")
    assert set(data) == set(fp.READING_LABELS)
    for reading, (x, rho, lo, hi) in data.items():
        assert x == sorted(x) and len(x) == len(rho) == len(lo) == len(hi) > 1
        assert all(-1 <= r <= 1 for r in rho if np.isfinite(r)) and np.isfinite(rho).any()
        assert all(a <= b for a, b in zip(lo, hi) if np.isfinite(a) and np.isfinite(b))
    fig = view.make_figure(measurement=label, estimator="matched", source="corpus")
    assert fig.layout.title.text.startswith(label) and len(fig.data) == 2 * len(fp.READING_LABELS)


@pytest.mark.parametrize("make", [fp.types_interactive, fp.curvature_interactive])
def test_a_cloud_of_types_draws_at_most_max_points_of_the_tables_own(tables, make):
    view = make(tables)
    label, (model, lang) = next((k, v) for k, v in fp._measurements(tables).items() if v[0] == "smollm2-135m")
    values = dict(view.defaults, measurement=label)
    data = view.compute(**values)
    assert 0 < len(data["x"]) <= fp.MAX_POINTS
    t = tables[model]["types"]
    t = t[(t["language"] == lang) & (t["layer"] == data["layer"])]
    x = np.log10(t["corpus_count"]) if make is fp.types_interactive else t["radius_t"]
    assert set(np.round(data["x"], 9)) <= set(np.round(x.to_numpy(), 9))
    assert len(view.make_figure(**values).data[0].x) == len(data["x"])


def test_anisotropy_draws_one_line_per_measurement_over_relative_depth(tables):
    view = fp.anisotropy_interactive(tables)
    data = view.compute(measure="mean_cosine", sink="without")
    assert set(data) == set(fp._measurements(tables))
    for x, y in data.values():
        assert x.min() == 0 and x.max() == 1 and len(x) == len(y)
    fig = view.make_figure(measure="sink_norm_ratio", sink="with")
    assert fig.layout.yaxis.type == "log" and len(fig.data) == len(data)


def test_the_alignment_figure_offers_the_decoders_only(tables):
    view = fp.alignment_interactive(tables)
    models = view.params[0].options
    assert models == tuple(m for m in MODELS if "alignment" in tables[m]) == ("smollm2-135m", "gemma3-270m")
    data = view.compute(model="gemma3-270m")
    assert set(data) == set(fp.NETWORKS) and all(len(d) and d["layer"].is_monotonic_increasing
                                                 for d in data.values())


@pytest.mark.slow
def test_every_static_page_is_light(tables):
    for make in (fp.premise_interactive, fp.anisotropy_interactive, fp.curvature_interactive):
        html = make(tables).to_html()
        assert "Plotly.newPlot" in html and len(html) < 1_000_000, make.__name__
