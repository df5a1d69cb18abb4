"""One case of bench_versions.py, built in a process of its own from the glassformer sources
that ``spec["src"]`` names (a checkout's ``src`` folder), so that two versions of the library
run side by side in one paired run.

Nothing here imports glassformer before ``spec["src"]`` leads ``sys.path``: the case
modules it then imports (train_case, encoder_peers, bench_hooks) import glassformer from there.

    train       one training step (zero_grad, forward, backward, AdamW) of a GPT-2 layout
                DecoderLM (train_case.py), shapes from peers.py
    encoder     an EncoderModel forward on a padded batch (eval, no grad), fast paths on
                (packing: ``use_fast_paths()`` where the version has it, on by default before)
    generate    greedy generation with the KV cache, 16-token prompt, ``new`` tokens
    cache       ``run_with_cache`` of every hook point (bench_hooks.py's "all" case)
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["make_paired_step"]


def make_paired_step(spec: dict[str, Any]):
    """The step of ``spec["case"]`` at ``spec["shape"]`` from the sources ``spec["src"]``."""
    sys.path.insert(0, spec["src"])
    import torch

    torch.manual_seed(0)
    step = _CASES[spec["case"]](spec)
    import glassformer

    if not glassformer.__file__.startswith(spec["src"]):  # imported from elsewhere first
        raise RuntimeError(f"glassformer came from {glassformer.__file__}, not {spec['src']}")
    return step


def _train(spec: dict[str, Any]):
    from benchmarks import train_case

    return train_case.make_paired_step({"peer": "glassformer", "shape": spec["shape"]})


def _encoder(spec: dict[str, Any]):
    import torch

    from benchmarks.common import Shape
    from benchmarks.encoder_peers import glassformer_config, make_batch
    from glassformer.models import EncoderModel

    shape = Shape(**spec["shape"])
    model = EncoderModel(glassformer_config(shape)).eval()
    if hasattr(model, "use_fast_paths"):  # the caller chooses them; earlier: on when built
        model.use_fast_paths()
    ids, mask = make_batch(shape)

    @torch.no_grad()
    def step() -> None:
        model(ids, mask)

    return step


def _generate(spec: dict[str, Any]):
    import torch

    from benchmarks.bench_hooks import build
    from benchmarks.common import Shape
    from glassformer.generation import generate

    model, ids = build(Shape(**spec["shape"]))
    prompt = ids[:, :16]

    def step() -> None:
        generate(model, prompt, max_new_tokens=spec["new"], temperature=0, eos_id=())

    torch.set_grad_enabled(True)
    return step


def _cache(spec: dict[str, Any]):
    import torch

    from benchmarks.bench_hooks import build
    from benchmarks.common import Shape

    model, ids = build(Shape(**spec["shape"]))

    @torch.no_grad()
    def step() -> None:
        model.run_with_cache(ids)

    return step


_CASES = {"train": _train, "encoder": _encoder, "generate": _generate, "cache": _cache}
