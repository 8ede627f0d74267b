"""Training lab: a small multilingual corpus, its tokenizer, and matched encoder/decoder models.

Submodules (imported on demand; ``models`` pulls in torch and transformers):

* :mod:`tanbias.lab.corpus`     corpus loading with checksums, language mixtures, splits
* :mod:`tanbias.lab.tokenizer`  the shared byte-level BPE tokenizer (train / load)
* :mod:`tanbias.lab.models`     EuroBERT (MLM) and Llama (causal LM) of identical shape
* :mod:`tanbias.lab.posthoc`    the alignment probe on released or local checkpoints (post hoc)
"""


def __getattr__(name):
    # ``tanbias.lab.bench_lab()`` without importing torch when the package is imported
    if name == "bench_lab":
        from tanbias.lab.train import bench_lab
        return bench_lab
    raise AttributeError(f"module 'tanbias.lab' has no attribute {name!r}")
