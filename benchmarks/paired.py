"""Paired timing: the peers' steps interleaved in short blocks, each peer in its own process.

On a shared virtual machine the speed of the whole machine drifts over seconds to minutes
(this one's 2048³ matmul peak moved between 110 and 181 GFLOP/s in a day). Timing each peer
for a few seconds, one after the other, compares peers measured in different spells. Here
every peer waits in its own process with its model built and warmed up, and the driver asks
each in turn for one block of steps (the order reversed every other round), so the blocks of
one round share a spell. A ratio of two peers is the median over rounds of the ratio of their
block times: a slow spell lengthens both terms and cancels. A matrix multiply served the
same way gives the matmul peak of each round, for MFU. Only one process runs at a time; the
others wait on their pipe.

Each peer keeps its own process, so its malloc setting and caches are its own, as in the
one-process-per-case measurements; ``LocalRunner`` runs a step in the calling process
instead (smoke tests).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import multiprocessing
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.processes import minor_faults

__all__ = ["FAULTS", "MATMUL", "LocalRunner", "ProcessRunner", "interleave", "per_block", "run"]

MATMUL = "matmul"  # the name a benchmark gives the case that serves its matmul-peak step
FAULTS = "faults"  # minor page faults per step of a block: a count, not a duration

Step = Callable[[], object]  # may return {phase: seconds}


def run(
    module: str,
    specs: dict[str, dict[str, Any]],
    seconds: float,
    *,
    min_blocks: int = 5,
    in_process: bool = False,
) -> dict[str, Any]:
    """``interleave`` the steps ``module.make_paired_step(spec)`` of every named spec, each
    in a process of its own (in this one with ``in_process``); {"error": ...} if one failed."""
    runners: dict[str, Any] = {}
    try:
        for name, spec in specs.items():
            if in_process:
                step = importlib.import_module(module).make_paired_step(spec)
                runners[name] = LocalRunner(step, spec.get("warmup", 2))
            else:
                runners[name] = ProcessRunner(module, spec)
        for runner in runners.values():
            runner.wait()
        return interleave(runners, seconds, min_blocks=min_blocks)
    except RuntimeError as e:
        return {"error": str(e)}
    finally:
        for runner in runners.values():
            runner.close()


def interleave(
    runners: dict[str, Any],
    seconds: float,
    *,
    min_blocks: int = 5,
    block_s: float = 0.25,
    on_block: Callable[[int, str, float], None] | None = None,
) -> dict[str, Any]:
    """Rounds of one block per runner until ``seconds`` have passed and at least
    ``min_blocks`` rounds are done. A runner's block is as many steps as last about
    ``block_s`` (at least one), sized from one step of each. ``on_block(round, name,
    seconds)`` is called after each block (round 0: the sizing step), for progress.

    Returns {"steps_per_block": {name: k}, "blocks": {name: {"step": [ms per step, one per
    round], "faults": [minor page faults per step, one per round], phase: [...]}}}; a step
    that returns {phase: seconds} adds its phases."""
    per = {}
    for n, r in runners.items():
        one = r.block(1)["step"]
        per[n] = max(1, math.ceil(block_s / max(one, 1e-9)))
        if on_block:
            on_block(0, n, one)
    names = list(runners)
    blocks: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    t0 = time.perf_counter()
    done = 0
    while done < min_blocks or time.perf_counter() - t0 < seconds:
        for n in names if done % 2 == 0 else names[::-1]:
            got = runners[n].block(per[n])
            for phase, x in got.items():
                blocks[n].setdefault(phase, []).append(x if phase == FAULTS else 1000 * x)
            if on_block:
                on_block(done + 1, n, got["step"] * per[n])
        done += 1
    return {"steps_per_block": per, "blocks": blocks}


def per_block(num: list[float], den: list[float]) -> dict[str, float]:
    """The median, min and max over rounds of num[i] / den[i]."""
    r = [a / b for a, b in zip(num, den, strict=True)]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)}


def run_block(step: Step, n: int) -> dict[str, float]:
    """Per step over ``n`` steps: seconds of the wall time ("step") and of the step's own
    phases, and the minor page faults ("faults")."""
    phases: dict[str, float] = {}
    faults = minor_faults()
    t0 = time.perf_counter()
    for _ in range(n):
        got = step()
        for phase, s in got.items() if isinstance(got, dict) else ():
            phases[phase] = phases.get(phase, 0.0) + s
    wall = time.perf_counter() - t0
    faults = minor_faults() - faults
    own = {p: s / n for p, s in phases.items() if p not in ("step", FAULTS)}
    return {"step": wall / n, FAULTS: faults / n, **own}


class LocalRunner:
    """A step run in this process, warmed up as the workers warm theirs."""

    def __init__(self, step: Step, warmup: int = 2) -> None:
        self.step = step
        for _ in range(warmup):
            step()

    def wait(self) -> None:
        pass

    def block(self, n: int) -> dict[str, float]:
        return run_block(self.step, n)

    def close(self) -> None:
        pass


class ProcessRunner:
    """``module.make_paired_step(spec)`` built and warmed up in a process of its own, which
    then runs blocks of steps when asked. Start several, then ``wait()`` for each."""

    def __init__(self, module: str, spec: dict[str, Any]) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter, as run_isolated
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, module, spec), daemon=True)
        self._proc.start()
        child.close()

    def wait(self) -> None:
        """Block until the step is built and warmed up; RuntimeError if the process failed."""
        self._receive()

    def block(self, n: int) -> dict[str, float]:
        self._conn.send(n)
        return self._receive()

    def close(self) -> None:
        with contextlib.suppress(OSError):  # the worker may be gone already
            self._conn.send(None)
        self._proc.join(timeout=30)
        if self._proc.is_alive():
            self._proc.kill()

    def _receive(self, timeout: float = 1800.0):
        if not self._conn.poll(timeout):
            raise RuntimeError(f"paired worker gave no answer in {timeout:.0f} s")
        try:
            kind, value = self._conn.recv()
        except EOFError:
            self._proc.join(timeout=5)
            code = self._proc.exitcode
            hint = ""
            if code is not None and code < 0:  # killed by a signal: SIGKILL is the OOM killer's
                hint = (
                    " (out of memory? every paired case holds its model at once: fewer "
                    "--peers (bench_train: --no-peer-reuse) or --paired-seconds 0)"
                )
            raise RuntimeError(f"paired worker exited with status {code}{hint}") from None
        if kind == "error":
            raise RuntimeError(value)
        return value


def _serve(conn, module: str, spec: dict[str, Any]) -> None:
    """The worker: build the step, warm it up, then answer block requests until None."""
    try:
        import torch

        torch.set_num_threads(spec["threads"])
        torch.manual_seed(spec.get("seed", 0))
        step = importlib.import_module(module).make_paired_step(spec)
        for _ in range(spec.get("warmup", 2)):
            step()
        conn.send(("ready", None))
        while (n := conn.recv()) is not None:
            conn.send(("block", run_block(step, n)))
    except Exception as e:  # reported to the driver, which names the failed case
        conn.send(("error", f"{type(e).__name__}: {e}"))
