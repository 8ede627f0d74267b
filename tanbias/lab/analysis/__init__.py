"""Analysis of trained runs (chapters 5-8), in layer order:

* :mod:`~tanbias.lab.analysis.tables`   alignment / radius tables from the probe's captures
* :mod:`~tanbias.lab.analysis.views`    the numbers of the trained views of chapters 5, 6
* :mod:`~tanbias.lab.analysis.radii`    per-token radii on a common held-out text (``tokens.csv``)
* :mod:`~tanbias.lab.analysis.sweep`    statistics of runs and of the 2x2 sweep, verdicts
* :mod:`~tanbias.lab.analysis.report`   every number and word chapter 8 and the closing page glue
* :mod:`~tanbias.lab.analysis.posthoc`  the same probe on released or local checkpoints
"""
