"""A reader that goes away (``glassformer generate ... | head -c 20``, ``eval | head``): the
command stops quietly with status 141 (128 + SIGPIPE, what a shell reports for a Unix tool
stopped that way), nothing on stderr but eval's progress lines, no "Exception ignored" at the
interpreter's exit."""

from __future__ import annotations

import os
import re
import subprocess
import sys

ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}
PROGRESS = re.compile(r"scoring: \d+/\d+ examples \(\d+%\), (done in \S+|.* left)")


def test_a_closed_pipe_ends_generate_and_eval_quietly(lm_run, tmp_path):
    run = lm_run[0]
    commands = {
        "generate": ["generate", "--checkpoint", run, "--prompt", "the ", "--max-new-tokens", "40"],
        "eval": ["eval", "--checkpoint", run, "--json", tmp_path / "eval.json"],
    }
    procs = {}
    for name, argv in commands.items():
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "glassformer", *map(str, argv)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ONE_THREAD,  # the two run side by side: no note that the other is busy
        )
        procs[name].stdout.close()  # the reader is gone before the first write
    for name, proc in procs.items():
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141, (name, err)
        assert all(PROGRESS.fullmatch(line) for line in err.splitlines()), (name, err)
        assert ("scoring: 13/13" in err) == (name == "eval")
    assert (tmp_path / "eval.json").is_file()  # written before the first print
