"""One case of the graph-attention benchmark (bench_graph_attention.py): one (level, graph, T,
peer), run in a process of its own by ``run_case(spec)``.

    build       the inputs (requiring gradients), the loss weights W and, for "layer", the layer
    prewarm     every kernel once at T = 384, so that first-use set-up is in the baseline
    dense_mask  the dense peer's (T, T) bool mask, g.mask(T), a block of rows at a time
    make_step   one step: forward, loss = Σ y ⊙ W, backward to the inputs and the weights
    timed       warm-up steps, then timed steps: their median ms
    PathSpy     which of graph_attention's paths ran (local, edges, dense)

Memory: after the warm-up the heap's free memory is handed back (malloc_trim) and the resident
set read, the baseline; the dense peer builds its mask (counted), the high-water mark VmHWM is
reset, the steps run, and **MB** is the peak above the baseline. An allocation that fails
(under ``memory_limit_gb``, RLIMIT_DATA) is recorded as {"oom": ...}, not raised.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any, ClassVar

import torch

from benchmarks.processes import peak_rss_mb, reset_peak_rss, rss_mb
from glassformer import graphs
from glassformer.nn import MultiHeadAttention
from glassformer.nn import graph_attention as ga
from glassformer.nn.scaled_dot_product import fused_attention

GRAPHS: dict[str, Callable[[int], graphs.AttentionGraph]] = {
    "window": lambda w: graphs.sliding_window(w),
    "bigbird": lambda w: graphs.bigbird(w, n_global=2, n_random=3, seed=0),
    "window-causal": lambda w: graphs.sliding_window(w, causal=True),
}
LEVELS = ("layer", "attention")
PEERS = ("sparse", "dense")
PREWARM_T = 384  # the kernels' warm-up before the baseline
MASK_CHUNK = 1 << 22  # (query, key) pairs of the dense mask computed at a time
D_MODEL, N_HEAD = 512, 8
OOM_WORDS = ("can't allocate memory", "out of memory", "Cannot allocate memory")


def build(level: str, t: int) -> tuple[dict[str, torch.Tensor], torch.nn.Module | None]:
    """The inputs (requiring gradients), the loss weights W and, for "layer", the layer."""
    if level == "layer":
        layer = MultiHeadAttention(D_MODEL, N_HEAD)
        x = torch.randn(1, t, D_MODEL, requires_grad=True)
        return {"x": x, "w": torch.randn(1, t, D_MODEL)}, layer
    d = D_MODEL // N_HEAD
    qkv = {n: torch.randn(1, N_HEAD, t, d, requires_grad=True) for n in ("q", "k", "v")}
    return {**qkv, "w": torch.randn(1, N_HEAD, t, d)}, None


def make_step(level, peer, g, mask, inputs, layer) -> Callable[[], float]:
    """One forward + backward; returns the loss."""
    leaves = [u for u in inputs.values() if u.requires_grad]

    def forward() -> torch.Tensor:
        if level == "layer":
            kw = {"graph": g} if peer == "sparse" else {"mask": mask}
            return layer(inputs["x"], **kw)
        q, k, v = inputs["q"], inputs["k"], inputs["v"]
        if peer == "sparse":
            return ga.graph_attention(q, k, v, g)
        return fused_attention(q, k, v, mask)

    def step() -> float:
        loss = (forward() * inputs["w"]).sum()
        loss.backward()
        for u in leaves:
            u.grad = None
        if layer is not None:
            layer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step


def dense_mask(g: graphs.AttentionGraph, t: int) -> torch.Tensor:
    """The dense peer's (T, T) bool mask, ``g.mask(T)``, built a block of rows at a time:
    ``allows`` on all T² pairs at once takes several bytes of temporaries per pair (BigBird's
    random keys: 24, more than 16 GB at T = 16384), which is not the attention's cost."""
    pos = torch.arange(t)
    rows = max(1, MASK_CHUNK // t)
    return torch.cat([g.allows(pos[a : a + rows, None], pos, t) for a in range(0, t, rows)])


def prewarm(level: str, g, layer) -> None:
    """Run every kernel once at a small size (the band kernel, SDPA with a mask, the layer's
    matmuls), so that the libraries' first-use set-up is in the baseline of both peers."""
    t = PREWARM_T
    small, _ = build(level, t)
    for peer in PEERS:
        make_step(level, peer, g, g.mask(t), small, layer)()
    q, k, v = (torch.randn(1, N_HEAD, t, 16, requires_grad=True) for _ in range(3))
    ga.graph_attention(q, k, v, g, path="local").sum().backward()


def release_freed_memory() -> None:
    """Collect garbage and hand the heap's free memory back to the system (glibc's
    malloc_trim), so that the baseline RSS is the live memory and the steps' memory shows
    in the peak above it."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL(None).malloc_trim(0)


class PathSpy:
    """Records which of graph_attention's paths run (local, edges, dense)."""

    NAMES: ClassVar = {
        "local_attention": "local",
        "edge_attention": "edges",
        "fused_attention": "dense",
    }

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.saved = {n: getattr(ga, n) for n in self.NAMES}

    def __enter__(self) -> PathSpy:
        for name, fn in self.saved.items():
            setattr(ga, name, self._wrap(name, fn))
        return self

    def __exit__(self, *exc) -> None:
        for name, fn in self.saved.items():
            setattr(ga, name, fn)

    def _wrap(self, name, fn):
        def spy(*args, **kwargs):
            self.seen.add(self.NAMES[name])
            return fn(*args, **kwargs)

        return spy


def sdpa_kernel(t: int, mask: torch.Tensor) -> str:
    """The fused kernel torch picks for (1, 8, T, 64) float32 with this mask."""
    from torch.nn.attention import SDPBackend

    q = torch.empty(1, N_HEAD, t, D_MODEL // N_HEAD)  # never written: no memory touched
    try:
        return SDPBackend(torch._fused_sdp_choice(q, q, q, mask)).name.lower()
    except (AttributeError, RuntimeError, ValueError):
        return "unknown"


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """One (level, graph, T, peer): its median step, peak memory above the baseline and the
    path that ran; {"oom": ...} when an allocation failed."""
    own = spec.get("isolated", False)  # in a process of its own (not a smoke test's)
    if own and spec.get("memory_limit_gb"):
        soft = int(spec["memory_limit_gb"] * 2**30)
        resource.setrlimit(
            resource.RLIMIT_DATA, (soft, resource.getrlimit(resource.RLIMIT_DATA)[1])
        )
    level, peer, t = spec["level"], spec["peer"], spec["t"]
    g = GRAPHS[spec["graph"]](spec["window"])
    torch.manual_seed(spec.get("seed", 0))
    inputs, layer = build(level, t)
    prewarm(level, g, layer)
    if own:
        release_freed_memory()
    base = rss_mb()
    out: dict[str, Any] = {"base_rss_mb": base}
    try:
        mask = dense_mask(g, t) if peer == "dense" else None
        if mask is not None:
            out["mask_mb"] = mask.numel() / 2**20
            out["sdpa"] = sdpa_kernel(t, mask)
            if own:  # the mask stays; the temporaries that computed it go
                release_freed_memory()
        step = make_step(level, peer, g, mask, inputs, layer)
        reset_peak_rss()
        with PathSpy() as spy:
            out.update(timed(step, spec["budget"]))
        if peer == "sparse":
            out["path"] = ",".join(sorted(spy.seen)) or "none"
    except (RuntimeError, MemoryError) as err:
        if not isinstance(err, MemoryError) and not any(w in str(err) for w in OOM_WORDS):
            raise
        out["oom"] = str(err).splitlines()[0][:200]
    out["peak_rss_mb"] = peak_rss_mb()
    out["mb"] = out["peak_rss_mb"] - base
    return out


def timed(step: Callable[[], float], budget: dict[str, Any]) -> dict[str, Any]:
    """Warm-up steps (at least ``warmup`` and ``warmup_s`` seconds), then timed steps (at least
    ``min_steps``, until ``seconds`` have passed, at most ``max_steps``): their median ms."""
    t0 = time.perf_counter()
    loss = step()
    first = time.perf_counter() - t0
    done = 1
    while done < budget["warmup"] or time.perf_counter() - t0 < budget["warmup_s"]:
        step()
        done += 1
    ms: list[float] = []
    t1 = time.perf_counter()
    while len(ms) < budget["min_steps"] or (
        len(ms) < budget["max_steps"] and time.perf_counter() - t1 < budget["seconds"]
    ):
        s0 = time.perf_counter()
        step()
        ms.append(1000 * (time.perf_counter() - s0))
    return {
        "ms": statistics.median(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "steps": len(ms),
        "warmup_steps": done,
        "first_step_s": first,
        "loss": loss,
    }
