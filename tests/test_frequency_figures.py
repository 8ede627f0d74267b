"""Chapter-2 additions to tanbias.theory.frequency: flat occurrence radii and the Zipf figures."""

import numpy as np
import plotly.io as pio
import pytest

from tanbias.errors import ParameterError
from tanbias.figures.frequency import zipf_figure, zipf_interactive
from tanbias.theory.frequency import ZipfVocabulary, occurrence_radii, zipf_data
from tanbias.theory.radial import Laplace


@pytest.mark.parametrize("law", [None, Laplace(2.0)], ids=["gaussian", "laplace"])
def test_occurrence_radii_have_mean_square_eta(law):
    V = ZipfVocabulary(20, s=1.0, t_max=0.5, alpha=0.5, law=law)
    tok, r = occurrence_radii(V, 300_000, 3, np.random.default_rng(0))
    eta = V.eta_g(3)
    for i in (0, 5, 19):
        sel = tok == i
        se = np.std(r[sel] ** 2) / np.sqrt(sel.sum())
        assert abs(np.mean(r[sel] ** 2) - eta[i]) < 4 * se


def test_occurrence_radii_bad_vocab():
    with pytest.raises(ParameterError, match="vocab"):
        occurrence_radii("zipf", 10, 2, 0)


def test_spearman_sign_follows_alpha():
    assert zipf_data(ZipfVocabulary(300, alpha=0.5), n=4000)["spearman"] < -0.5
    assert abs(zipf_data(ZipfVocabulary(300, alpha=0.0), n=4000)["spearman"]) < 0.1


def test_figure_and_interactive():
    z = zipf_data(ZipfVocabulary(300, t_max=0.4, alpha=0.5), n=500)
    assert len(z["frequencies"]) <= 100 and len(z["occ_distance"]) == 500
    fig = zipf_figure(z)
    assert len(fig.data) == 3 and fig.layout.xaxis.type == "log" and fig.layout.yaxis2.title.text
    sd = zipf_interactive(n_tokens=100, exponents=(0.5, 1.5), alphas=(0.0, 1.0), n=200).static_dict()
    assert len(sd["frames"]) == 4 and len(pio.to_json(sd, validate=False)) < 200_000
    assert [s["currentvalue"]["prefix"].split(" ")[0] for s in sd["layout"]["sliders"]] == ["Zipf", "radius"]


def test_the_zipf_exponent_is_the_balancing_knob():
    """Flatter frequencies (smaller s) spread the occurrences over more tokens and, the rarest
    token's radius fixed, raise the pooled mean squared radius when alpha > 0; alpha = 0 leaves
    it alone."""
    z = {s: zipf_data(ZipfVocabulary(500, s=s, t_max=0.2, alpha=0.5), n=50) for s in (0.5, 1.0, 1.5)}
    assert z[0.5]["top_share"] < z[1.0]["top_share"] < z[1.5]["top_share"]
    assert z[0.5]["mean_eta"] > z[1.0]["mean_eta"] > z[1.5]["mean_eta"]
    off = [zipf_data(ZipfVocabulary(500, s=s, t_max=0.2, alpha=0.0), n=50)["mean_eta"] for s in (0.5, 1.5)]
    assert off[0] == pytest.approx(off[1], rel=1e-12)
