"""tanbias.figures.balancing: Exercise 4.3's figure and its two sliders."""

import plotly.io as pio

from tanbias.figures.balancing import balancing_figure, balancing_interactive
from tanbias.theory.balancing import POOLINGS, balancing_data


def test_figure_draws_the_shares_and_every_pooling():
    fig = balancing_figure(balancing_data(300, 1.0, 0.2, s_grid=[0.0, 0.5, 1.0, 1.5], n_ranks=30))
    assert len(fig.data) == 2 + 2 * len(POOLINGS)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text and fig.layout.xaxis2.title.text
    assert "s = 1" in fig.layout.title.text and "α = +0.2" in fig.layout.title.text


def test_the_static_book_gets_one_frame_per_pair_of_slider_values():
    inter = balancing_interactive(V=200, s_values=(0.0, 0.5, 1.0), alphas=(-0.2, 0.0, 0.2, 0.4))
    sd = inter.static_dict()
    assert len(sd["frames"]) == 12 and len(sd["layout"]["sliders"]) == 2
    assert len(pio.to_json(sd, validate=False)) < 300_000
