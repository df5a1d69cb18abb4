"""nanoGPT's GPT as a peer of bench_train, imported from a checkout the user points to
(``--nanogpt PATH``): its ``model.py`` is loaded from PATH as it ships, never copied here.

nanoGPT's interface, the only part used: ``GPTConfig(n_layer, n_head, n_embd, block_size,
vocab_size, dropout, bias)`` and ``GPT(config)``, whose ``forward(idx, targets)`` returns
(logits, loss) with the cross-entropy ignoring target -1. Built with ``bias=True`` and
``dropout=0`` it has GPT-2's weights in GPT-2's shapes (learned positions, pre-norm
LayerNorm with bias, tied head), as glassformer's and Hugging Face's peers do; its GELU is
the erf form (``nn.GELU()``), where the other two use the tanh approximation.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import torch.nn.functional as F

from benchmarks.common import Shape

__all__ = ["LABEL", "build_nanogpt", "load_nanogpt", "model_file"]

LABEL = "nanoGPT"
NEEDED = ("GPT", "GPTConfig")
_loaded: dict[Path, ModuleType] = {}


def model_file(path: str | Path) -> Path:
    """``PATH/model.py``; ValueError naming PATH when it is not a directory holding one."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ValueError(f"{path}: not a directory; give the nanoGPT checkout holding model.py")
    file = root / "model.py"
    if not file.is_file():
        raise ValueError(f"{path}: no model.py in that directory; give a nanoGPT checkout")
    return file.resolve()


def load_nanogpt(path: str | Path) -> ModuleType:
    """The module ``PATH/model.py`` (imported once per file); ValueError naming PATH when it
    is missing, fails to import, or lacks GPT or GPTConfig."""
    file = model_file(path)
    if file in _loaded:
        return _loaded[file]
    name = "nanogpt_model_" + hashlib.sha256(str(file).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[name]
        raise ValueError(f"{path}: model.py failed to import: {type(e).__name__}: {e}") from e
    missing = [n for n in NEEDED if not hasattr(module, n)]
    if missing:
        del sys.modules[name]
        raise ValueError(
            f"{path}: model.py has no {', '.join(missing)}; nanoGPT's defines GPT and GPTConfig"
        )
    _loaded[file] = module
    return module


def build_nanogpt(shape: Shape, path: str | Path):
    """(model, loss_fn(model, ids)): nanoGPT's GPT at ``shape``, no dropout, biases on; the
    loss is its own forward's, with the next token of each position as target (-1, ignored,
    at the last), the positions glassformer's and Hugging Face's shifted labels cover."""
    module = load_nanogpt(path)
    config = module.GPTConfig(
        n_layer=shape.n_layer,
        n_head=shape.n_head,
        n_embd=shape.d_model,
        block_size=shape.context,
        vocab_size=shape.vocab,
        dropout=0.0,
        bias=True,
    )
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its parameter count
        model = module.GPT(config)

    def loss_of(m, ids):
        targets = F.pad(ids[:, 1:], (0, 1), value=-1)  # (B, T): next token, -1 at the end
        return m(ids, targets)[1]

    return model, loss_of
