"""The pages' shell commands as the tests run them, in the walk of a page (test_walk.py) and
in a tutorial's notebook kernel (test_tutorial_notebooks.py): ``glassformer`` in-process through
``glassformer.cli.main``, its pictures drawn once for each kind (``PictureKinds``), the commands
that serve, start several processes or run the suite left out with the reason. No pytest here:
a notebook's kernel loads this file as it is.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path
from unittest import mock

import glassformer.inspect._draw as draw
import glassformer.runs.curves as curves
from glassformer.cli import main

ROOT = Path(__file__).resolve().parents[2]
# Commands that are not run, each with the reason and where it is tested instead.
NOT_WALKED = {
    r"glassformer explore (?!.*--export)": "serves until stopped: tests/explore/test_server.py "
    "starts the server and reads its page",
    r"torchrun ": "starts several processes: tests/training/test_torchrun.py runs train "
    "under torchrun",
    r"make (test|docs|install|lint|bench)\b": "set-up, lint, this test suite and the site: "
    "CI runs them",
    r"\.venv/bin/python -m pytest": "this test suite",
    r"(\.venv/bin/)?python -m benchmarks": "the benchmarks: tests/test_benchmarks.py runs each "
    "one on its smallest shapes",
    r"cp bench-results/|\.venv/bin/python docs/scripts/benchmark_pages\.py": "the benchmark "
    "pages: tests/docs/test_benchmark_pages.py",
    r"python -m glassformer\.examples\.karate": "a worked example with its own options: "
    "tests/examples/test_karate.py runs its main()",
}


def not_walked(command: str) -> str | None:
    """Why ``command`` is not run by the tests, or None when it is."""
    return next((why for pattern, why in NOT_WALKED.items() if re.match(pattern, command)), None)


class PictureKinds:
    """A stand-in for ``replace_file`` in the picture writers (glassformer/inspect/_draw.py,
    glassformer/runs/curves.py): the first picture of each kind (its file name, numbers aside:
    ``masks.png``, ``self_attention_decoder_layer#_head#.png``, ``loss.png``) is drawn and
    written by the library; a later one of the same kind gets a copy of its bytes, undrawn.
    Drawing is most of what ``inspect`` and ``train`` cost, and the drawing code is checked on
    its own by tests/inspect/ and tests/runs/."""

    def __init__(self):
        self.drawn: dict[str, bytes] = {}  # kind -> the PNG drawn for it

    @staticmethod
    def kind(path) -> str:
        return re.sub(r"\d+", "#", Path(path).name)

    def writer(self, replace_file):
        def write(path, produce):
            kind = self.kind(path)
            if kind in self.drawn:
                return replace_file(path, lambda tmp: Path(tmp).write_bytes(self.drawn[kind]))
            written = replace_file(path, produce)
            self.drawn[kind] = Path(path).read_bytes()
            return written

        return write

    @contextlib.contextmanager
    def once_each(self):
        """Inside: the picture writers write each kind once (their ``replace_file``)."""
        with contextlib.ExitStack() as stack:
            for module in (draw, curves):
                writer = self.writer(module.replace_file)
                stack.enter_context(mock.patch.object(module, "replace_file", writer))
            yield


PICTURES = PictureKinds()  # one per process: the pages of a walk share it


def glassformer(argv: list[str], where: str) -> str:
    """``glassformer ARGV`` run in-process, its pictures drawn once each; what it printed.
    Fails, naming ``where``, when it exits with an error, prints a traceback or prints nothing."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), PICTURES.once_each():
        code = main(argv)
    assert code == 0, f"{where}: exit status {code}\n{err.getvalue()}"
    assert "Traceback" not in err.getvalue(), f"{where}\n{err.getvalue()}"
    assert out.getvalue(), f"{where}: printed nothing"
    return out.getvalue()


def make_recipe(target: str) -> list[str]:
    """The command of a one-line Makefile recipe, e.g. ``demo`` -> ``glassformer train``."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(rf"^{re.escape(target)}:.*\n\t(.+)\n(?!\t)", text, re.M)
    assert recipe, f"make {target}: not a one-line recipe of the Makefile"
    argv = shlex.split(recipe[1].replace("$(VENV)/bin/", ""))
    assert argv[0] == "glassformer", f"make {target} runs {recipe[1]}"
    return argv


def in_kernel(shell) -> None:
    """A notebook kernel's ``!`` lines (IPython's ``shell.system``) run as the walk runs a
    page's commands: ``!glassformer ...`` (and ``!make demo``) in-process, a command the tests
    leave out printed with the reason, any other (``mkdir``) by the shell; a command that fails
    raises, so the cell fails (a plain ``!`` line only sets ``_exit_code``)."""
    system = shell.system

    def run(line: str) -> None:
        command = shell.var_expand(line, depth=2).strip()
        why = not_walked(command)
        words = [os.path.expanduser(w) for w in shlex.split(command, comments=True)]
        if why:
            print(f"(not run by the tests: {why})")
        elif words[:1] == ["glassformer"] or words[:2] == ["make", "demo"]:
            argv = words[1:] if words[0] == "glassformer" else make_recipe(words[1])[1:]
            print(glassformer(argv, f"!{command}"), end="")
        else:
            system(line)
            code = shell.user_ns.get("_exit_code", 0)
            assert code == 0, f"!{command}: exit status {code}"

    shell.system = run
