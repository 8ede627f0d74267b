"""Helpers shared by the figure tests (importable: pytest pythonpath = tests)."""

from __future__ import annotations

from tanbias.figures.interactive import Interactive


def static_ok(inter, n_frames, max_bytes=1_000_000) -> dict:
    """Check an interactive's static form: an Interactive, ``n_frames`` slider frames, and a
    page under ``max_bytes``; return its static figure dict."""
    assert isinstance(inter, Interactive)
    fig = inter.static_dict()
    assert len(fig["frames"]) == n_frames
    html = inter.to_html()
    assert len(html) < max_bytes
    return fig
