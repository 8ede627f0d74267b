"""One cache for figure layouts, shared by every figure module.

Kept apart from :mod:`tanbias.figures` so that importing a maths module does
not import plotly: the decorated builders import it themselves when first
called.
"""
from __future__ import annotations

import functools
import json


def frozen_layout(build):
    """Decorator: build a figure's layout once, hand out a fresh plain-dict copy per call.

    Merging the book's template into a ``go.Figure`` costs about 60 ms, more
    than a live update may take (chapter figures redraw in < 50 ms). ``build``
    returns a ``go.Figure`` carrying only the layout (its arguments must be
    hashable); the decorated function returns that layout as a new ``dict`` on
    every call (JSON round trip of a cached string), so callers can edit titles
    and axis ranges freely.

    Example
    -------
    >>> import plotly.graph_objects as go
    >>> @frozen_layout
    ... def _layout(title):
    ...     return go.Figure(layout=dict(title=dict(text=title)))
    >>> a = _layout("A"); a["title"]["text"] = "changed"
    >>> _layout("A")["title"]["text"]
    'A'
    """
    @functools.lru_cache(maxsize=None)
    def cached(*args, **kwargs) -> str:
        return json.dumps(build(*args, **kwargs).to_plotly_json()["layout"])

    @functools.wraps(build)
    def fresh(*args, **kwargs) -> dict:
        return json.loads(cached(*args, **kwargs))

    fresh.cache_clear = cached.cache_clear
    return fresh
