"""The mathematics of the book (layer: maths): closed forms, exact samplers and the checks
that compare them with simulation. Every module imports numpy and scipy only
(pandas inside a function), never plotly or :mod:`tanbias.figures`."""
