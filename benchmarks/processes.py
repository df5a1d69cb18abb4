"""One process per benchmark case, and the memory that process peaked at.

Each (peer, shape) runs in a fresh Python process (``run_isolated``), so that its peak memory
is its own, not what earlier cases left behind. The peak is the process's resident-set
high-water mark over the warm-up and timed steps (``VmHWM``, reset after the model is built).
``getrusage(RUSAGE_SELF).ru_maxrss`` is recorded too, but on Linux it starts at the parent's
RSS when the child is spawned (the kernel carries the high-water mark across exec) and cannot
be reset, so it is only a fallback where /proc is missing. "Above imports" subtracts the RSS
measured after the peer's libraries were imported (and what torch imports lazily, see
``preload_torch``), before anything was built: weights, gradients, optimizer state,
activations and workspace. The minor page faults per timed step (``minor_faults``) tell how
much of that memory the allocator returned to the system and mapped again on every step.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


# Memory ---------------------------------------------------------------------------------------
def _status_kb(key: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def preload_torch() -> None:
    """Import what torch loads lazily on first use (building an optimizer imports
    torch._dynamo, sympy, ...: about 80 MB, which transformers' import loads up front), so that
    the RSS measured after the imports is comparable across peers."""
    import torch

    torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], fused=True)


def prepare_process(spec: dict[str, Any]) -> None:
    """Before a case builds its model: torch's lazy imports, then glassformer's
    ``reuse_freed_memory()`` when ``spec["reuse_memory"]`` asks for it (process-wide)."""
    preload_torch()
    if spec.get("reuse_memory"):
        from glassformer.training.memory import reuse_freed_memory

        reuse_freed_memory()


def rss_mb() -> float:
    """The current resident set size, MB (ru_maxrss where /proc is missing)."""
    kb = _status_kb("VmRSS")
    return ru_maxrss_mb() if kb is None else kb / 1024


def reset_peak_rss() -> bool:
    """Reset the RSS high-water mark (VmHWM) to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    kb = _status_kb("VmHWM")
    return ru_maxrss_mb() if kb is None else kb / 1024


def ru_maxrss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, else kB


def minor_faults() -> int:
    """Page faults of this process so far that read nothing from disk: mostly pages of
    freshly mapped memory touched for the first time, which the kernel zero-fills one by one.
    Their count per step shows how much memory the allocator handed back and mapped again."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# Subprocesses ---------------------------------------------------------------------------------
_WORKER = "from benchmarks.processes import worker_main; worker_main()"


def execute(module: str, spec: dict[str, Any], isolated: bool = True) -> dict[str, Any]:
    """``module.run_case(spec)``, in its own process unless ``isolated`` is False (quicker, for
    smoke tests; the peak RSS is then reset per case but the process carries what earlier
    cases left behind)."""
    if isolated:
        return run_isolated(module, spec)
    import torch

    torch.manual_seed(spec.get("seed", 0))
    return {**importlib.import_module(module).run_case(spec), "isolated": False}


def run_isolated(module: str, spec: dict[str, Any], timeout: float = 1800) -> dict[str, Any]:
    """``module.run_case(spec)`` in a fresh Python process; its result dict, or
    {"error": ...} if the process failed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-c", _WORKER, module, json.dumps(spec), str(out)]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
            return {"error": f"exit status {proc.returncode}: " + " | ".join(tail)}
        return json.loads(out.read_text(encoding="utf-8"))


def worker_main() -> None:
    """Entry point of a subprocess: argv = module, JSON spec, output path."""
    import torch

    module, spec, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec.get("seed", 0))
    result = {**importlib.import_module(module).run_case(spec), "isolated": True}
    out.write_text(json.dumps(result), encoding="utf-8")
