"""One command of the data benchmark (bench_data.py), timed and its memory watched.

``run_command`` starts the command with its output piped, and measures:

* ``wall_s``: from the start to the exit of the command;
* ``first_step_s``: from the start to the first output line matching ``marker`` (the line a
  trainer prints when its first step is done: ``step 1/`` for glassformer, ``iter 0:`` for
  nanoGPT's train.py), read as the command prints it (the children run with
  PYTHONUNBUFFERED=1); None when no line matched;
* ``peak_rss_mb``: the largest sum of the resident sets of the command and all its descendant
  processes, sampled every 0.1 s from /proc (worker processes count: a fork's pages shared
  with its parent are counted in both, as ``ps`` counts them);
* ``max_process_rss_mb``: the largest resident set of any one of those processes, exact, from
  the kernel's accounting of the finished command (``wait4``'s ``ru_maxrss``).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

__all__ = ["folder_bytes", "run_command", "tree_rss_mb"]

SAMPLE_S = 0.1


def _children() -> dict[int, list[int]]:
    """{parent pid: [child pids]} of every process on the machine, from /proc/*/stat."""
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the fields after "(name)": state ppid
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def tree_rss_mb(pid: int) -> float:
    """The resident set of ``pid`` and all its descendants, MB (0 for a finished process)."""
    kids, todo, total = _children(), [pid], 0
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            with open(f"/proc/{p}/statm", encoding="ascii") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total / 2**20


def folder_bytes(path: str | Path) -> int:
    """The bytes of every file under ``path`` (0 when it does not exist)."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def run_command(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    marker: str | None = None,
    keep: str | None = None,
    timeout: float = 3600,
) -> dict[str, Any]:
    """Run ``cmd`` and measure it (the module docstring). Returns {"wall_s", "first_step_s",
    "peak_rss_mb", "max_process_rss_mb", "output", "kept"} (output: its last 40 lines, stdout
    and stderr together; kept: every line matching ``keep``), with "error" added when it failed
    or timed out."""
    env = {**(env or os.environ), "PYTHONUNBUFFERED": "1"}
    pattern = re.compile(marker) if marker else None
    keeping = re.compile(keep) if keep else None
    tail: deque[str] = deque(maxlen=40)
    kept: list[str] = []
    marked: list[float] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace",
    )  # fmt: skip

    def read() -> None:
        for line in proc.stdout:
            if pattern and not marked and pattern.search(line):
                marked.append(time.perf_counter() - t0)
            tail.append(line.rstrip("\n"))
            if keeping and keeping.search(line):
                kept.append(line.rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak = 0.0
    timed_out = False
    while reader.is_alive():
        peak = max(peak, tree_rss_mb(proc.pid))
        reader.join(SAMPLE_S)
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            timed_out = True
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    result = {
        "wall_s": wall,
        "first_step_s": marked[0] if marked else None,
        "peak_rss_mb": peak,
        "max_process_rss_mb": usage.ru_maxrss / 1024,  # kB on Linux
        "output": list(tail),
        "kept": kept,
    }
    if timed_out:
        result["error"] = f"timed out after {timeout:.0f} s"
    elif proc.returncode != 0:
        result["error"] = f"exit status {proc.returncode}: " + " | ".join(list(tail)[-6:])
    elif pattern and not marked:
        result["error"] = f"no line matched {marker!r}: " + " | ".join(list(tail)[-6:])
    return result
