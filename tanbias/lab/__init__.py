"""Training lab: a small multilingual corpus, its tokenizer, matched encoder/decoder models,
the in-step alignment probe, the experiments, and the analysis of committed runs (the training lab's chapters).

Modules, in layer order (a module imports only modules before it; ``models``
and everything after it import torch, the reports of ``analysis`` do not):

* :mod:`tanbias.lab.config`       constants and the typed run config (RunConfig, ProbeSettings, ModelSize)
* :mod:`tanbias.lab.experiments`  the experiments as data: one Design each (the 2x2 sweep, the dose
  experiment, the aliasing knob, the causal test) and their registry, EXPERIMENTS
* :mod:`tanbias.lab.runs`         run folders: atomic writes, manifests, checksums, paths
* :mod:`tanbias.lab.corpus`       corpus loading with checksums, language mixtures, splits
* :mod:`tanbias.lab.tokenizer`    the shared byte-level BPE tokenizer (train / load)
* :mod:`tanbias.lab.data`         training batches, masking, the one held-out-text builder
* :mod:`tanbias.lab.models`       EuroBERT (MLM) and Llama (causal LM) of identical shape; the
  loader of a trained run's checkpoint
* :mod:`tanbias.lab.zoo`, :mod:`tanbias.lab.checkpoints`  released models installed from pip
  packages; hub ids and local mirrors of saved checkpoints
* :mod:`tanbias.lab.probe`        in-step capture of activations and gradients
* :mod:`tanbias.lab.distributed`  training on N processes under torchrun
* :mod:`tanbias.lab.train`        the resumable training loop and its one step function
* :mod:`tanbias.lab.bench`        the lab's benchmarks (make bench)
* :mod:`tanbias.lab.analysis`     tables, views, radii, what the experiments share, each
  experiment's statistics, the released models, and the reports the chapters glue
* :mod:`tanbias.lab.pipeline`     what happens after a run; reproduce; an experiment's queue
* ``tanbias.lab.__main__``        ``python -m tanbias.lab ...``

Figures of the runs live in :mod:`tanbias.figures.runs`, :mod:`tanbias.figures.sweep`,
:mod:`tanbias.figures.pretrained`, :mod:`tanbias.figures.dose`, :mod:`tanbias.figures.alias`
and :mod:`tanbias.figures.causal`.
"""
