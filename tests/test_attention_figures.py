"""tanbias.figures.attention: chapter 5's figures and interactive (static grids stay light)."""

import plotly.graph_objects as go
import pytest

from figurehelpers import static_ok
from tanbias.theory.attention import (TERMS, removal_scaling, score_term_scaling,
                               random_attention_heads)
from tanbias.figures.attention import removal_figure, softmax_terms_interactive, term_scaling_figure
from tanbias.theory.residual import default_loop_manifold


@pytest.fixture(scope="module")
def M():
    return default_loop_manifold()


@pytest.fixture(scope="module")
def stack(M):
    return random_attention_heads(3, M.D, seed=0)


def test_term_scaling_figure(M, stack):
    fig = term_scaling_figure(score_term_scaling(M, [0.05, 0.1, 0.2], *stack.head(0)))
    assert isinstance(fig, go.Figure) and len(fig.data) == len(TERMS)
    assert fig.layout.title.text and fig.layout.xaxis.title.text and fig.layout.yaxis.title.text


def test_chapter5_interactive_and_figures(M):
    st = random_attention_heads(6, M.D, seed=0)
    fig = static_ok(softmax_terms_interactive(M, st), 7 * 6)
    assert len(fig["data"]) == 2                                 # two bar groups
    df = removal_scaling(M, [0.05, 0.1], *st.head(0), n_tokens=16)
    f = removal_figure(df)
    assert isinstance(f, go.Figure) and len(f.data) == 2 and f.layout.title.text
