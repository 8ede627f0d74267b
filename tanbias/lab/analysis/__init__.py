"""Analysis of trained runs and released models (chapters 5-10), in layer order:

* :mod:`~tanbias.lab.analysis.tables`             alignment / radius tables from the probe's captures
* :mod:`~tanbias.lab.analysis.views`              the numbers of the trained views of chapters 5, 6
* :mod:`~tanbias.lab.analysis.radii`              per-token radii on a common held-out text (``tokens.csv``)
* :mod:`~tanbias.lab.analysis.sweep`              statistics of runs and of the 2x2 sweep, verdicts
* :mod:`~tanbias.lab.analysis.sweep_report`       the numbers chapters 7, 8 and the closing page glue
* :mod:`~tanbias.lab.analysis.posthoc`            the same probe on released or local checkpoints
* :mod:`~tanbias.lab.analysis.pretrained`         the released models measured (``make pretrained``)
* :mod:`~tanbias.lab.analysis.pretrained_report`  the numbers, checks and tables of chapter 9
* :mod:`~tanbias.lab.analysis.dose_design`        the dose experiment's predictions and power
* :mod:`~tanbias.lab.analysis.dose`               the dose runs' statistics
* :mod:`~tanbias.lab.analysis.dose_report`        the numbers, checks and verdicts of chapter 10
"""
