"""Analysis of trained runs and released models, in layer order (each experiment's chapter is its Design's):

* :mod:`~tanbias.lab.analysis.tables`             alignment / radius tables from the probe's captures, and
  the readers every analysis shares (``run_metrics``, ``tokens_table``, the layer average)
* :mod:`~tanbias.lab.analysis.views`              the numbers of the trained views of the gradient side's chapters
* :mod:`~tanbias.lab.analysis.radii`              per-token radii on a common held-out text (``tokens.csv``)
* :mod:`~tanbias.lab.analysis.registered`         what every experiment shares: its runs, its pinned
  registration, power, Holm, the t interval, the learning check, the matched-progress reading
* each experiment of :data:`tanbias.lab.experiments.EXPERIMENTS`, in the registry's order:
  ``<name>_design`` (what was fixed before its runs), ``<name>`` (its runs measured),
  ``<name>_report`` (the numbers, checks and words its chapters quote):

  * :mod:`~tanbias.lab.analysis.sweep`, :mod:`~tanbias.lab.analysis.sweep_report`: the 2x2 sweep
  * :mod:`~tanbias.lab.analysis.dose_design`, :mod:`~tanbias.lab.analysis.dose`,
    :mod:`~tanbias.lab.analysis.dose_report`: the dose experiment
  * :mod:`~tanbias.lab.analysis.alias_design`, :mod:`~tanbias.lab.analysis.alias`,
    :mod:`~tanbias.lab.analysis.alias_report`: the aliasing knob
  * :mod:`~tanbias.lab.analysis.causal_design`, :mod:`~tanbias.lab.analysis.causal`,
    :mod:`~tanbias.lab.analysis.causal_report`: the causal test
  * :mod:`~tanbias.lab.analysis.rivals`, :mod:`~tanbias.lab.analysis.rivals_posthoc`,
    :mod:`~tanbias.lab.analysis.rivals_report`: the rival accounts
  * :mod:`~tanbias.lab.analysis.horizon_design`, :mod:`~tanbias.lab.analysis.horizon`,
    :mod:`~tanbias.lab.analysis.horizon_report`: past the transient

* :mod:`~tanbias.lab.analysis.checkpoint_probe`  the same probe on released or local checkpoints
* :mod:`~tanbias.lab.analysis.pretrained`         the released models measured (``make pretrained``)
* :mod:`~tanbias.lab.analysis.pretrained_report`  the released models' results as tables, and the numbers,
  checks and tables of their chapter
* :mod:`~tanbias.lab.analysis.measure_inputs`, :mod:`~tanbias.lab.analysis.measure_folder`,
  :mod:`~tanbias.lab.analysis.measure`, :mod:`~tanbias.lab.analysis.measure_report`: the measurement of
  any model (``python -m tanbias measure``): its settings and text, its folder, the measuring, and what
  the page and the report read
* :mod:`~tanbias.lab.analysis.findings`           the book's verdicts at a glance: each property of the
  statement against each line of evidence (the closing page and the introduction)
"""
