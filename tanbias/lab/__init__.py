"""Training lab: a small multilingual corpus, its tokenizer, matched encoder/decoder models,
the in-step alignment probe, and the analysis of committed runs (chapters 5-8).

Modules, in layer order (a module imports only modules before it; ``models``
and everything after it import torch):

* :mod:`tanbias.lab.config`     constants (kinds, regimes, sizes, special tokens), run configs
* :mod:`tanbias.lab.runs`       run folders: atomic writes, manifests, checksums, paths
* :mod:`tanbias.lab.corpus`     corpus loading with checksums, language mixtures, splits
* :mod:`tanbias.lab.tokenizer`  the shared byte-level BPE tokenizer (train / load)
* :mod:`tanbias.lab.data`       the corpus split, training batches, the common held-out text
* :mod:`tanbias.lab.models`     EuroBERT (MLM) and Llama (causal LM) of identical shape; the
  loader of a trained run's checkpoint
* :mod:`tanbias.lab.probe`      in-step capture of activations and gradients
* :mod:`tanbias.lab.train`      the resumable training loop, checkpoints, ``bench_lab``
* :mod:`tanbias.lab.analysis`   alignment tables, trained views, radii, sweep statistics,
  the chapter-8 report, the probe on released checkpoints (post hoc)
* :mod:`tanbias.lab.pipeline`   what happens after a run; reproduce; the sweep
* ``tanbias.lab.__main__``   ``python -m tanbias.lab ...``

Figures of the runs live in :mod:`tanbias.figures.runs` and :mod:`tanbias.figures.sweep`.
"""
