"""No command writes through a symbolic link.

For every command that writes files, a first run in a fresh folder shows which names it
creates or rewrites there (a name in a folder that existed before, or the first new folder on
the way to a file). A second run, in another fresh folder, meets a symbolic link at each of
those names, each to its own file outside the folder. Every outside file must come out as it
was, and each link must be gone (replaced by what the command writes) unless the command
refused it: exit status 2 and one line naming the link. A refused link is put back as it was
before and the command run again, so every link is met by a run that gets that far.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from glassformer.training.lock import LOCK_FILE

from .conftest import LM_TEXT, TINY, run_cli

# A one-layer character model trained for 2 steps; checkpoint, plots and logs at the end.
SMALL = [*TINY, "--set", "train.eval_every=2", "--set", "sample.max_new_tokens=4"]
TEXT = "the cat"


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """data.txt and run/, a tiny run trained once for the whole module."""
    root = tmp_path_factory.mktemp("links-base")
    (root / "data.txt").write_text(LM_TEXT, encoding="utf-8")
    result = run_cli("train", "--data", root / "data.txt", "--out", root / "run", "--steps", "2",
                     *SMALL)  # fmt: skip
    assert result.code == 0, result.err
    return root


def _empty_out(base: Path, ws: Path) -> Path:
    (ws / "out").mkdir()
    return ws / "out"


def _copied_run(base: Path, ws: Path) -> Path:
    shutil.copytree(base / "run", ws / "run", symlinks=True)
    return ws / "run"


# name: (set up the folder ws and give the arguments, names written but gone by the end)
COMMANDS: dict[str, tuple[Callable[[Path, Path], list], tuple[str, ...]]] = {
    "train": (
        lambda base, ws: [
            *("train", "--data", base / "data.txt", "--out", _empty_out(base, ws)),
            *("--steps", "2", *SMALL),
        ],
        (f"out/{LOCK_FILE}",),
    ),
    "train --resume": (
        lambda base, ws: ["train", "--out", _copied_run(base, ws), "--resume", "--steps", "3"],
        (f"run/{LOCK_FILE}",),
    ),
    "eval": (
        lambda base, ws: ["eval", "--checkpoint", _copied_run(base, ws), "--batches", "1"],
        (),
    ),
    "inspect --circuits": (
        lambda base, ws: [
            *("inspect", "--checkpoint", base / "run", "--text", TEXT),
            *("--out", _empty_out(base, ws), "--circuits"),
        ],
        (),
    ),
    "explore --export": (
        lambda base, ws: [
            *("explore", "--checkpoint", base / "run", "--text", TEXT),
            *("--export", ws / "page.html"),
        ],
        (),
    ),
}
# names each command must be found writing (so that the test cannot pass by finding none)
EXPECTED = {
    "train": {"out/run.json", "out/metrics.jsonl", "out/loss.png", "out/checkpoints"},
    "train --resume": {"run/run.json", "run/metrics.jsonl", "run/checkpoints/step-000003"},
    "eval": {"run/eval.json"},
    "inspect --circuits": {"out/index.md", "out/masks.png", "out/logit_lens.png"},
    "explore --export": {"page.html"},
}


def _tree(root: Path) -> dict[str, tuple[int, int, int] | None]:
    """{relative path: (inode, size, mtime) of a file, None for a folder}; links not followed."""
    found: dict[str, tuple[int, int, int] | None] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            key = path.relative_to(root).as_posix()
            found[key] = None if path.is_dir() else (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def _written_names(before: dict, after: dict) -> set[str]:
    """For each file new or changed in ``after``: the file when its folder existed before,
    else the first folder on its way that did not."""
    names = set()
    for path, key in after.items():
        if key is None or before.get(path) == key:
            continue
        parts = path.split("/")
        prefixes = ("/".join(parts[: i + 1]) for i in range(len(parts)))
        names.add(next((p for p in prefixes if p not in before), path))
    return names


def _clean_refusal(result) -> str:
    assert result.code == 2, (result.code, result.err[-2000:])
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("glassformer: error: "), result.err[-2000:]
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_no_command_writes_through_a_link(base, tmp_path, command):
    setup, transient = COMMANDS[command]
    first = tmp_path / "first"
    first.mkdir()
    argv = setup(base, first)
    before = _tree(first)
    result = run_cli(*argv)
    assert result.code == 0, result.err
    names = sorted(_written_names(before, _tree(first)) | set(transient))
    assert EXPECTED[command] <= set(names), names

    ws, outside, kept = tmp_path / "ws", tmp_path / "outside", tmp_path / "kept"
    for folder in (ws, outside, kept):
        folder.mkdir()
    argv = [str(a).replace(str(first), str(ws)) for a in argv]
    setup(base, ws)
    target = {name: outside / f"target-{i}" for i, name in enumerate(names)}
    aside = {name: kept / f"{i}" for i, name in enumerate(names)}
    for name in names:
        target[name].write_text(f"outside, linked from {name}\n", encoding="utf-8")
        path = ws / name
        if path.exists():  # a file the command rewrites: put aside, to put back if refused
            shutil.move(path, aside[name])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target[name])
    expected = {p: p.read_bytes() for p in outside.iterdir()}

    links = list(names)
    while links:
        result = run_cli(*argv)
        changed = [n for n in names if target[n].read_bytes() != expected[target[n]]]
        assert not changed, f"{command} wrote through the links at {changed}"
        assert set(outside.iterdir()) == set(expected), f"{command} wrote beside the targets"
        if result.code == 0:
            break
        line = _clean_refusal(result)
        named = [n for n in links if re.search(re.escape(str(ws / n)) + r"(?![\w./-])", line)]
        assert named, f"{command} refused without naming a link: {line}"
        name = max(named, key=len)
        (ws / name).unlink()
        if aside[name].exists():
            shutil.move(aside[name], ws / name)
        links.remove(name)
    for name in links:  # written over: now the command's own file (or gone with its folder)
        assert not (ws / name).is_symlink(), (command, name)
