"""The pages of the documentation as steps: their ```bash and ```python blocks and the
commands of their tables, in the order a reader meets them (tests/docs/test_walk.py walks them,
tests/docs/test_examples.py runs the Python blocks of the pages that give no command). Plain
Python, no pytest: docs/scripts/outputs.py reads the pages with it when the site is built."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# a fenced block (```text title="Output" too), at the margin or indented in a folded section
# (??? success "Checks"): its indentation, language and lines, closed at the same indentation
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M
)
# a table row whose first cell is a command: | `glassformer predict ...` | what it does |
ROW = re.compile(r"^\| `((?:glassformer|torchrun) [^`]+)` \|", re.M)


@dataclass(frozen=True)
class Step:
    """One thing a reader does: ``kind`` "shell" (one command line) or "python" (a block)."""

    kind: str
    text: str
    line: int  # where it starts on its page, 1-based


def load_script(stem: str):
    """docs/scripts/<stem>.py as a module (the docs' scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_{stem}", ROOT / f"docs/scripts/{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the script looks its module up there
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Fence:
    """A fenced block of a page: its language, its lines without their indentation, the
    offsets of its start and of the end of its closing fence, and its first line (1-based)."""

    lang: str
    body: str
    start: int
    end: int
    line: int
    indent: str


def fences(text: str) -> list[Fence]:
    """The fenced blocks of a page's text, in order."""
    return [
        Fence(m["lang"], re.sub(f"(?m)^{m['indent']}", "", m["body"]), m.start(), m.end(),
              text.count("\n", 0, m.start("body")) + 1, m["indent"])
        for m in FENCE.finditer(text)
    ]  # fmt: skip


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def steps(page: Path) -> list[Step]:
    """The page's shell command lines (``\\``-continued lines joined, comments dropped) and
    Python blocks, in page order. The reference pages quote usage lines, not commands."""
    text = page.read_text(encoding="utf-8")
    found: list[tuple[int, Step]] = []
    for f in fences(text):
        if f.lang == "python":
            found.append((f.start, Step("python", f.body, f.line)))
        elif f.lang == "bash":
            for offset, command in _command_lines(f.body):
                found.append((f.start + offset, Step("shell", command, f.line + offset)))
    if "reference" not in page.relative_to(ROOT).parts:
        for m in ROW.finditer(text):
            if not _inside_fence(text, m.start()):
                line = text.count("\n", 0, m.start()) + 1
                found.append((m.start(), Step("shell", m[1], line)))
    return [step for _, step in sorted(found, key=lambda pair: pair[0])]


def walked(page: Path) -> bool:
    """A page that gives glassformer commands, or changes into a folder for them, is walked as
    a whole (test_walk.py); the benchmark page's commands are the benchmarks'."""
    words = ("glassformer ", "make demo", "mkdir ", "cd ")
    return any(step.kind == "shell" and step.text.startswith(words) for step in steps(page))


def _command_lines(block: str) -> list[tuple[int, str]]:
    """(line offset in the block, command) for each command of a bash block."""
    out, pending, first = [], "", 0
    for i, line in enumerate(block.splitlines()):
        if not pending:
            first = i
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        if shlex.split(pending, comments=True):
            out.append((first, pending.strip()))
        pending = ""
    return out


def _inside_fence(text: str, index: int) -> bool:
    return any(f.start < index < f.end for f in fences(text))
