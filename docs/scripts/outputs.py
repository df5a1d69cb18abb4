"""Run the code of the documentation's pages and write what it prints, for the pages to show.

    python docs/scripts/outputs.py                          # the Concepts pages (seconds)
    python docs/scripts/outputs.py --check                  # fail if a committed output differs
    python docs/scripts/outputs.py --concepts attention     # one Concepts page
    python docs/scripts/outputs.py --tutorials look-inside  # a real run of a tutorial (minutes)

A page shows the output of a block in a ``text`` block right under it, which includes the
generated file (pymdownx.snippets)::

    ```text title="Output"
    --8<-- "docs/outputs/concepts/tokenization-1.txt"
    ```

The file of a page's n-th ```python or ```bash block is ``docs/outputs/<folder>/<page>-<n>.txt``.

Concept pages: each ```python block runs on its own, in a fresh namespace and an empty folder,
as tests/docs/test_examples.py runs it (and that test checks that what it prints equals the
committed file). Their examples are seeded and small, so the output is the same on every run.

Tutorials: the page is walked as a reader types it, in a fresh home folder, every command with
its real step counts (``glassformer`` commands as subprocesses, their standard output and error
as a terminal piped into a file shows them; Python blocks in page order). Each block's output,
its time and a hash of its text go to ``docs/outputs/tutorials/<page>.json``, the whole run's
time to ``<page>-time.md`` (shown at the top of the page), and the pictures the run writes that
the page shows to ``docs/images/tutorials/<page>/``. tests/docs/test_outputs.py checks that each
shown output still belongs to the block above it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "outputs"
IMAGES = ROOT / "docs" / "images" / "tutorials"
MAX_LINES = 40  # a longer output shows its first and last lines
HEAD = 12
PROGRESS = re.compile(r"(step \d+/\d+: |scoring: \d+/)")  # a run's progress, one line a while
INCLUDE = re.compile(r'\A\n*( *)```text[^\n]*\n\1--8<-- "(docs/outputs/[\w./-]+)"\n\1```')
# Commands a tutorial gives that its real run leaves out (tests/docs/test_walk.py says why).
NOT_RUN = re.compile(r"torchrun |glassformer explore (?!.*--export)")


def _walk_parsing():
    """tests/docs/pages.py: how the pages' blocks and commands are read (no pytest needed)."""
    spec = importlib.util.spec_from_file_location("docs_steps", ROOT / "tests/docs/pages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


STEPS = _walk_parsing()


@dataclass(frozen=True)
class Block:
    """A page's n-th ```python or ```bash block (``index`` from 1) and where it ends."""

    page: Path
    index: int
    kind: str
    text: str
    line: int  # the first line of its code, 1-based, as tests/docs/pages.py counts
    end: int  # the offset just after its closing fence
    indent: str = ""  # inside a folded section (??? success "Checks"): its indentation

    @property
    def output(self) -> Path:
        return OUT / self.page.parent.name / f"{self.page.stem}-{self.index}.txt"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def commands(self) -> list[str]:
        """A bash block's command lines as written, trailing comments dropped."""
        return [_without_comment(c) for _, c in STEPS._command_lines(self.text)]


# Files a tutorial takes from an earlier one, made first by that page's block (not timed).
NEEDS = {"fine-tune": [("classifier", 2)]}  # reviews.csv


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = [f for f in STEPS.fences(text) if f.lang in ("python", "bash")]
    return [
        Block(page, n, f.lang, f.body, f.line, f.end, f.indent) for n, f in enumerate(found, 1)
    ]


def shown(block: Block) -> str | None:
    """The output file (a path from the checkout) the page includes right under ``block``."""
    text = block.page.read_text(encoding="utf-8")
    match = INCLUDE.match(text[block.end :])
    return match[2] if match else None


def include(block: Block) -> str:
    """The text block a page puts under ``block`` to show its output."""
    path, at = block.output.relative_to(ROOT).as_posix(), block.indent
    return f'{at}```text title="Output"\n{at}--8<-- "{path}"\n{at}```'


def show(page: Path, time_file: Path | None = None) -> None:
    """Put under each block of ``page`` that has an output file the text block including it,
    where it is missing, and the line ``time_file`` includes under the page's title."""
    text = page.read_text(encoding="utf-8")
    for block in reversed(blocks(page)):
        if block.output.is_file() and shown(block) is None:
            text = text[: block.end] + "\n\n" + include(block) + text[block.end :]
    if time_file is not None:
        line = f'--8<-- "{time_file.relative_to(ROOT).as_posix()}"'
        if line not in text:
            title = re.search(r"^# .*\n", text, re.M)
            text = text[: title.end()] + "\n" + line + "\n" + text[title.end() :]
    page.write_text(text, encoding="utf-8")


def _without_comment(command: str) -> str:
    """The command without its comment, continued lines' indentation as one space."""
    command = re.sub(r"\s{2,}", " ", command) if "#" not in command else command
    before = command.split(" #")[0].rstrip()
    keep = shlex.split(before) == shlex.split(command, comments=True)
    return re.sub(r"\s{2,}", " ", before) if keep else command


def shorten(text: str) -> str:
    """``text`` with at most MAX_LINES lines: the progress lines of a long run (``step 10/600:
    ...``) are left out between its first and last three, the validation lines kept; what is
    still too long keeps its first and last lines. Each gap says how many lines it holds."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= MAX_LINES:
        return "\n".join(lines) + "\n" if lines else ""
    progress = [i for i, line in enumerate(lines) if PROGRESS.match(line)]
    drop = set(progress[3:-3])
    kept: list[str] = []
    for i, line in enumerate(lines):
        if i in drop and i - 1 in drop:
            continue
        gap = sum(1 for _ in _run(drop, i)) if i in drop else 0
        kept.append(f"[... {gap} lines ...]" if gap else line)
    if len(kept) > MAX_LINES:
        tail = MAX_LINES - HEAD - 1
        gap = f"[... {len(kept) - HEAD - tail} lines ...]"
        kept = [*kept[:HEAD], gap, *kept[-tail:]]
    return "\n".join(kept) + "\n"


def _run(indices: set[int], start: int):
    """start, start + 1, ... while in ``indices``."""
    while start in indices:
        yield start
        start += 1


def run_python(code: str, where: str) -> str:
    """What a block prints, run on its own in a fresh namespace (in the current folder), on
    one thread: the sums of a training step then add up in the same order on every machine."""
    import torch

    out, threads = io.StringIO(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, where, "exec"), {"__name__": "__example__"})
    finally:
        torch.set_num_threads(threads)
    return out.getvalue()


# ---------------------------------------------------------------- the Concepts pages


def concept_pages(stems: list[str] = ()) -> list[Path]:
    """The Concepts pages, or those named (``attention``, ``positional``, ...)."""
    pages = sorted((ROOT / "docs" / "concepts").glob("*.md"))
    unknown = set(stems) - {p.stem for p in pages}
    if unknown:
        raise SystemExit(f"no Concepts page {sorted(unknown)}: {[p.stem for p in pages]}")
    return [p for p in pages if not stems or p.stem in stems]


def concept_outputs(pages: list[Path]) -> dict[Path, str]:
    """The output file of each Python block of ``pages`` that prints something."""
    made = {}
    for page in pages:
        for block in blocks(page):
            if block.kind != "python":
                continue
            with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
                printed = run_python(block.text, f"{STEPS.name(page)} line {block.line}")
            if printed:
                made[block.output] = printed
    return made


def write_concepts(check: bool, stems: list[str] = ()) -> list[str]:
    """Write (or with ``check``, compare) the outputs of the Concepts pages (or of those named);
    the problems found."""
    pages = concept_pages(stems)
    made = concept_outputs(pages)
    problems = []
    for path, text in made.items():
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                problems.append(f"{path.relative_to(ROOT)} differs from what the page prints")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if not check:
        for page in pages:
            show(page)
    numbered = re.compile("(" + "|".join(re.escape(page.stem) for page in pages) + r")-\d+")
    files = (OUT / "concepts").glob("*.txt")
    stale = {f for f in files if numbered.fullmatch(f.stem)} - set(made)
    problems += [f"{p.relative_to(ROOT)}: no block prints it" for p in sorted(stale)]
    return problems


# ---------------------------------------------------------------- the tutorials


def run_tutorial(page: Path, home: Path, skip: list[str] = ()) -> dict:
    """Walk ``page`` as written in a fresh ``home``; each block's output, time and hash. The
    commands that start with one of ``skip`` are left out (and listed in the record)."""
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    env.pop("GLASSFORMER_TEST_SCALE", None)
    start, record = os.getcwd(), {"blocks": {}, "skipped": []}
    os.chdir(home)
    for stem, index in NEEDS.get(page.stem, []):
        folder = home / "glassformer-tutorial"
        folder.mkdir(exist_ok=True)
        with contextlib.chdir(folder):
            needed = blocks(page.parent / f"{stem}.md")[index - 1]
            run_python(needed.text, f"{stem}.md line {needed.line}")
    began = time.perf_counter()
    try:
        for block in blocks(page):
            t0 = time.perf_counter()
            if block.kind == "python":
                where = f"{STEPS.name(page)} line {block.line}"
                printed = shorten(run_python(block.text, where))
            else:
                left_out = [c for c in block.commands() if c.startswith(tuple(skip))]
                record["skipped"] += left_out
                run = [c for c in block.commands() if c not in left_out]
                printed = "".join(_shell(command, home, env) for command in run)
            seconds = time.perf_counter() - t0
            print(f"{STEPS.name(page)} block {block.index}: {seconds:.0f} s", file=sys.stderr)
            record["blocks"][str(block.index)] = {
                "hash": block.digest,
                "seconds": round(seconds, 1),
                "output": printed,
            }
    finally:
        os.chdir(start)
    record["seconds"] = round(time.perf_counter() - began, 1)
    record["load"] = round(os.getloadavg()[2], 1)  # over the last 15 minutes: other work
    return record


def _shell(command: str, home: Path, env: dict) -> str:
    """One command line as a reader runs it: ``$ command`` and what it prints."""
    if NOT_RUN.match(command):
        return ""
    shown_line = f"$ {command}\n"
    out = []
    for argv in _split_and(shlex.split(command, comments=True)):
        if argv[:2] == ["mkdir", "-p"]:
            for folder in argv[2:]:
                Path(_expand(folder, home)).mkdir(parents=True, exist_ok=True)
        elif argv[0] == "cd":
            os.chdir(_expand(argv[1], home))
        elif argv[0] == "glassformer":
            done = subprocess.run(
                [sys.executable, "-m", "glassformer", *argv[1:]],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            if done.returncode:
                raise SystemExit(f"{command}: exit status {done.returncode}\n{done.stdout}")
            out.append(done.stdout)
        else:
            raise SystemExit(f"{command}: a command this script does not run")
    return shown_line + shorten(reader_paths("".join(out), home)) if out else ""


def reader_paths(text: str, home: Path) -> str:
    """``text`` with the run's home folder as ``~`` and the checkout's files from its root."""
    return text.replace(str(home), "~").replace(f"{ROOT}/", "")


def _split_and(argv: list[str]) -> list[list[str]]:
    commands: list[list[str]] = [[]]
    for word in argv:
        commands.append([]) if word == "&&" else commands[-1].append(word)
    return [c for c in commands if c]


def _expand(path: str, home: Path) -> str:
    return str(home) + path[1:] if path.startswith("~") else path


def machine() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M)
        name = model[1].strip() if model else name
    return f"{cores}-core CPU ({name})"


def write_tutorial(stem: str, pictures: list[str], keep: Path | None, skip: list[str]) -> None:
    """Run the tutorial ``stem`` for real and write its outputs, time and pictures (with
    ``keep``, every picture the run wrote is also copied there, and the record)."""
    page = ROOT / "docs" / "tutorials" / f"{stem}.md"
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        record = run_tutorial(page, home, skip)
        record["machine"] = machine()
        folder, made = IMAGES / stem, home / "glassformer-tutorial"
        for name in pictures:
            _save_picture(made / name, folder / name.replace("/", "-"))
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{stem}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
            for png in made.rglob("*.png"):
                target = keep / stem / png.relative_to(made)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(png.read_bytes())
    out = OUT / "tutorials"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{stem}-*.txt"):
        old.unlink()
    for block in blocks(page):
        printed = record["blocks"][str(block.index)].pop("output")
        if printed:
            block.output.write_text(printed, encoding="utf-8")
    (out / f"{stem}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    (out / f"{stem}-time.md").write_text(time_line(record), encoding="utf-8")
    show(page, out / f"{stem}-time.md")


def time_line(record: dict) -> str:
    """The line at the top of a tutorial: how long its run took, and where."""
    minutes = round(record["seconds"] / 60)
    took = f"about {minutes} minutes" if minutes > 1 else "about a minute"
    took = took if record["seconds"] >= 45 else "under a minute"
    cores = int(record["machine"].split("-")[0])
    load = record.get("load", 0)
    shared = f" shared with other work (load average {load})" if load > cores + 0.5 else ""
    left_out = ", ".join(f"`{c}`" for c in record.get("skipped", []))
    what = f"every command as written but {left_out}" if left_out else "every command as written"
    return (
        f"*Time: {took} on a {record['machine']}{shared}, {what}; "
        "the outputs below come from that run.*\n"
    )


def _save_picture(source: Path, target: Path) -> None:
    """Copy a PNG, reduced to 256 colours to stay small."""
    from PIL import Image

    target.parent.mkdir(parents=True, exist_ok=True)
    if not source.is_file():
        print(f"{source.name}: not written by the run", file=sys.stderr)
        return
    with Image.open(source) as image:
        image.convert("RGB").quantize(256).save(target, optimize=True)


# Pictures of the tutorials' real runs that the pages show (relative to the tutorials' folder).
PICTURES = {
    "look-inside": [
        "inside/self_attention_decoder.png",
        "inside/masks.png",
        "inside/residual_decoder.png",
        "inside/positional.png",
        "inside-reverse/cross_attention.png",
        "inside-reverse/cross_attention_layer1_head0.png",
        "inside-graphs/attention_graph_decoder.png",
        "inside-graphs/receptive_field_decoder.png",
        "attention.png",
        "graph.png",
        "attention_graph.png",
    ],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--tutorials", nargs="+", default=[], metavar="PAGE",
                        help="run these tutorials for real (minutes each)")  # fmt: skip
    parser.add_argument("--concepts", nargs="+", default=[], metavar="PAGE",
                        help="only these Concepts pages (default all)")  # fmt: skip
    parser.add_argument("--keep", type=Path, help="copy every picture a tutorial writes here")
    parser.add_argument("--skip", nargs="+", default=[], metavar="COMMAND",
                        help="leave out the commands that start so (too long to run)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.tutorials:
        for stem in args.tutorials:
            write_tutorial(stem, PICTURES.get(stem, []), args.keep, args.skip)
        return 0
    problems = write_concepts(args.check, args.concepts)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
