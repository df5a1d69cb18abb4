"""The README, Getting started and the guides, walked as a reader types them.

Each page that gives shell commands (in a ```bash block or in the first column of a table) is
walked on its own, in a fresh folder: its commands and its Python blocks in page order, the
``glassformer train`` commands that make the runs included, so that a later command finds the
run under the name the earlier one wrote. ``make demo`` runs the command its Makefile recipe
runs; ``cd`` and ``mkdir -p`` change and make folders (``~`` is the walk's own home folder).
The runs are shortened by ``GLASSFORMER_TEST_SCALE`` (read by glassformer/cli/scale.py,
applied by glassformer/runs/scale.py: steps, evaluations and generated examples times 0.002),
nothing else: the commands are the page's. ``glassformer`` runs in-process, its pictures drawn
once for each kind of picture per walk (tests/docs/commands.py says how).

A page either starts by changing into a scratch folder, or writes nothing outside ``runs/``
(which .gitignore covers) in the folder it starts in, standing for the reader's checkout; and
the repository's own ``git status`` is the same after the walk. The tutorials are run as their
notebooks are (tests/docs/test_tutorial_notebooks.py), with the same commands and the same scaling.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from .commands import glassformer, make_recipe, not_walked
from .pages import PAGES, ROOT, Step, name, steps, walked

# The tutorials run as notebooks instead (test_tutorial_notebooks.py), their commands as here.
WALKED = [page for page in PAGES if walked(page) and page.parent.name != "tutorials"]
SCALE = "0.002"  # the demo's 1000 steps: 2
# The reader's own files that the command-line pages name (reviews.csv, pairs.tsv, ...):
# written before a command that reads one, when the page has not made it itself.
REVIEWS = "label,text\n" + "pos,plot was very clever\nneg,cast was very dull\n" * 20
PAIRS = "the cat sat\tle chat était assis\ngood morning\tbonjour\nsee you\tà demain\n" * 10
OWN_FILES = {
    "reviews.csv": REVIEWS,
    "dev.csv": REVIEWS,
    "pairs.tsv": PAIRS,
    "dev.tsv": PAIRS,
    "notes.txt": "Monday. Fixed the gate; the hinge needs oil.\nTuesday. Rain all day.\n" * 20,
}


def git_status() -> str:
    """The repository's ``git status``; empty outside a git checkout (an unpacked sdist)."""
    if not (ROOT / ".git").exists():
        return ""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


class Walk:
    """A reader at the keyboard: the folder they are in and the folders they made."""

    def __init__(self, home: Path, start: Path):
        self.home, self.start = home, start
        self.scratch: list[Path] = []  # folders the page changed into
        self.own_files: set[Path] = set()
        self.log: list[str] = []

    def shell(self, step: Step) -> None:
        reason = not_walked(step.text)
        if reason:
            self.log.append(f"not walked: {step.text} ({reason})")
            return
        for command in _split_and(shlex.split(step.text, comments=True)):
            self.one(command, step)

    def one(self, argv: list[str], step: Step) -> None:
        where = f"line {step.line}: {step.text}"
        if argv[:2] == ["mkdir", "-p"]:
            for folder in argv[2:]:
                Path(self.expand(folder)).mkdir(parents=True, exist_ok=True)
        elif argv[0] == "cd":
            folder = Path(self.expand(argv[1])).resolve()
            os.chdir(folder)
            self.scratch.append(folder)
        elif argv[:1] == ["make"]:
            self.glassformer(make_recipe(argv[1])[1:], where)
        elif argv[0] == "glassformer":
            self.glassformer(argv[1:], where)
        else:
            raise AssertionError(f"{where}: a command the walk does not know (see NOT_WALKED)")

    def glassformer(self, argv: list[str], where: str) -> None:
        for arg in argv:
            if arg in OWN_FILES and not Path(arg).exists():
                Path(arg).write_text(OWN_FILES[arg], encoding="utf-8")
                self.own_files.add(Path(arg).resolve())
        glassformer(argv, where)
        self.log.append(f"glassformer {shlex.join(argv)}")

    def python(self, step: Step, page: str) -> None:
        code = compile(step.text, f"{page} line {step.line}", "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__example__"})
        self.log.append(f"python block of line {step.line}")

    def expand(self, path: str) -> str:
        return str(self.home) + path[1:] if path.startswith("~") else path

    def stray_files(self) -> list[str]:
        """Files written in the starting folder outside runs/ (the reader's own files and the
        folders changed into apart)."""
        allowed = [self.start / "runs", *(f for f in self.scratch if f != self.start)]
        return sorted(
            p.relative_to(self.start).as_posix()
            for p in files_under(self.start)
            if p not in self.own_files and not any(p.is_relative_to(a) for a in allowed)
        )


def _split_and(argv: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in argv:
        if word == "&&":
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


@pytest.fixture
def walk(tmp_path, monkeypatch):
    home, start = tmp_path / "home", tmp_path / "checkout"
    start.mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GLASSFORMER_TEST_SCALE", SCALE)
    monkeypatch.chdir(start)
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny runs: one thread is fastest on a shared CPU
    yield Walk(home, start)
    torch.set_num_threads(before)


@pytest.mark.slow  # each page trains its runs: seconds to most of a minute
@pytest.mark.parametrize("page", WALKED, ids=name)
def test_page_walks_as_written(page, walk):
    status = git_status()
    for step in steps(page):
        if step.kind == "shell":
            walk.shell(step)
        else:
            walk.python(step, name(page))
    assert walk.stray_files() == [], (
        f"{name(page)} writes outside runs/ in the reader's folder: change into a scratch "
        "folder first (cd), or write under runs/"
    )
    assert git_status() == status


def test_the_walk_covers_the_readme_and_the_guides():
    walked_names = {name(p) for p in WALKED}
    assert {"README.md", "docs/getting-started.md", "docs/guide/command-line.md"} <= walked_names
    assert not any(n.startswith("docs/tutorials/") for n in walked_names)  # their notebooks run


def test_each_tutorial_starts_in_a_scratch_folder():
    """The tutorials write their files (CSV files, pictures, converted models) into a folder of
    their own, never into the checkout."""
    for page in (ROOT / "docs" / "tutorials").glob("*.md"):
        first = steps(page)[0]
        words = shlex.split(first.text, comments=True) if first.kind == "shell" else []
        command = " ".join(words)
        assert re.fullmatch(r"mkdir -p (~/\S+) && cd \1", command), (name(page), first.text)
