"""The outputs the pages show (docs/outputs/, written by docs/scripts/outputs.py) belong to the
blocks they are shown under.

The Concepts pages' outputs are compared with a fresh run of each block in test_examples.py.
The tutorials' outputs come from one real run of each page (minutes of training, too long
for a test): here each shown output must be the file of the block above it, recorded from that
block's text as it is now (a changed command or block fails until the tutorial is run again),
a command's output must start with that command, and the page must say how long the run took.
What the commands print is not run again here.
"""

from __future__ import annotations

import json
import re

import pytest

from .pages import ROOT, load_script
from .test_examples import same_up_to_rounding

TUTORIALS = ROOT / "docs" / "tutorials"
SNIPPET = re.compile(r'^ *--8<-- "(docs/outputs/[^"]+)"$', re.M)  # in a fold too


OUTPUTS = load_script("outputs")
RUN = sorted(p.stem for p in (OUTPUTS.OUT / "tutorials").glob("*.json"))


def included() -> dict[str, str]:
    """Each file under docs/outputs/ a page includes: path -> the page."""
    found = {}
    for page in (ROOT / "docs").rglob("*.md"):
        for path in SNIPPET.findall(page.read_text(encoding="utf-8")):
            found[path] = page.relative_to(ROOT).as_posix()
    return found


def test_every_output_is_shown_and_every_shown_one_exists():
    files = {p.relative_to(ROOT).as_posix() for p in OUTPUTS.OUT.rglob("*") if p.is_file()}
    files -= {f"docs/outputs/tutorials/{stem}.json" for stem in RUN}
    shown = included()
    assert sorted(files - set(shown)) == [], "outputs no page shows"
    assert sorted(set(shown) - files) == [], "outputs the pages show that are missing"


def test_the_tutorials_that_take_a_while_were_run():
    assert {"look-inside", "classifier", "fine-tune", "hugging-face"} <= set(RUN)


@pytest.mark.parametrize("stem", RUN)
def test_tutorial_outputs_belong_to_their_blocks(stem):
    page = TUTORIALS / f"{stem}.md"
    record = json.loads((OUTPUTS.OUT / "tutorials" / f"{stem}.json").read_text(encoding="utf-8"))
    shown_any = False
    for block in OUTPUTS.blocks(page):
        path = OUTPUTS.shown(block)
        if path is None:
            continue
        shown_any = True
        assert path == block.output.relative_to(ROOT).as_posix(), (block.line, path)
        recorded = record["blocks"].get(str(block.index), {})
        assert recorded.get("hash") == block.digest, (
            f"{page.name} line {block.line}: the block changed since its output was recorded: "
            f"run python docs/scripts/outputs.py --tutorials {stem}"
        )
        text = (ROOT / path).read_text(encoding="utf-8")
        if block.kind == "bash":
            commands = [c for c in block.commands() if not c.startswith(("mkdir ", "cd "))]
            prompts = [line[2:] for line in text.splitlines() if line.startswith("$ ")]
            run = [c for c in commands if c not in record.get("skipped", [])]
            assert prompts == [c for c in run if not OUTPUTS.NOT_RUN.match(c)], path
            assert text.startswith("$ "), path
    assert shown_any, f"{page.name} shows none of its run's outputs"


# Tutorial blocks that stand alone (seeded, needing nothing an earlier command made) and print
# what the page shows: run again here, so that a change in what the code prints fails here
# until the tutorial is run again (the other outputs need the tutorial's training runs).
STANDALONE = [
    ("look-inside", 4),  # trace of a seeded tiny model: well under a second
    ("fine-tune", 3),  # the labelled lines, made from the plays with a seeded shuffle: a second
]
SEEDED = ("manual_seed", "random.Random(")


@pytest.mark.parametrize(("stem", "index"), STANDALONE)
def test_standalone_tutorial_blocks_print_what_the_page_shows(stem, index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    block = OUTPUTS.blocks(TUTORIALS / f"{stem}.md")[index - 1]
    assert block.kind == "python" and any(s in block.text for s in SEEDED), block.line
    printed = OUTPUTS.shorten(OUTPUTS.run_python(block.text, f"{stem}.md line {block.line}"))
    shown = block.output.read_text(encoding="utf-8")
    assert same_up_to_rounding(printed, shown), (
        f"{stem}.md line {block.line} prints other than {OUTPUTS.shown(block)} shows: "
        f"run python docs/scripts/outputs.py --tutorials {stem}\n--- printed\n{printed}"
    )


def test_the_fine_tune_table_gives_what_its_run_printed():
    """Pre-train, then fine-tune compares its two classifiers in a table: the accuracies there
    are those its ``glassformer eval`` commands printed, in order, and the last row's, of a
    model that always gives the same label, is the share of the larger label in the lines
    scored, as the page's data block printed it."""
    page = TUTORIALS / "fine-tune.md"
    blocks = OUTPUTS.blocks(page)
    evals = next(b for b in blocks if b.kind == "bash" and "glassformer eval" in b.text)
    printed = re.findall(r"^  accuracy +(\S+)$", evals.output.read_text(encoding="utf-8"), re.M)
    made = next(b for b in blocks if b.kind == "python").output.read_text(encoding="utf-8")
    real = int(re.search(r"^spelling-dev\.csv: \d+ lines, (\d+)% real$", made, re.M)[1])
    text = page.read_text(encoding="utf-8")
    table = re.findall(r"^\|[^|\n]+\|[^|\n]+\| (\d\.\d{3}) \|$", text, re.M)
    assert len(printed) == 2
    assert table == [f"{float(a):.3f}" for a in printed] + [f"{max(real, 100 - real) / 100:.3f}"]


@pytest.mark.parametrize("stem", RUN)
def test_tutorial_says_how_long_it_takes(stem):
    record = json.loads((OUTPUTS.OUT / "tutorials" / f"{stem}.json").read_text(encoding="utf-8"))
    time_file = OUTPUTS.OUT / "tutorials" / f"{stem}-time.md"
    assert time_file.read_text(encoding="utf-8") == OUTPUTS.time_line(record)
    lines = (TUTORIALS / f"{stem}.md").read_text(encoding="utf-8").splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("# "))
    first = next(line for line in lines[heading + 1 :] if line.strip())
    assert first == f'--8<-- "docs/outputs/tutorials/{stem}-time.md"', first


@pytest.mark.parametrize("stem", sorted(set(OUTPUTS.PICTURES) & set(RUN)))
def test_tutorial_pictures_are_committed_and_shown(stem):
    text = (TUTORIALS / f"{stem}.md").read_text(encoding="utf-8")
    for name in OUTPUTS.PICTURES[stem]:
        file = name.replace("/", "-")
        path = OUTPUTS.IMAGES / stem / file
        assert path.is_file(), f"{path}: run python docs/scripts/outputs.py --tutorials {stem}"
        assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size < 150_000
        assert f"(../images/tutorials/{stem}/{file})" in text, f"{stem}.md does not show {file}"


def test_a_long_output_keeps_its_first_and_last_lines():
    text = "".join(f"line {i}\n" for i in range(100))
    short = OUTPUTS.shorten(text).splitlines()
    assert len(short) == OUTPUTS.MAX_LINES
    assert short[0] == "line 0" and short[-1] == "line 99"
    assert short[OUTPUTS.HEAD] == f"[... {100 - OUTPUTS.MAX_LINES + 1} lines ...]"
    assert OUTPUTS.shorten("a\nb\n") == "a\nb\n"


def test_a_long_run_keeps_its_evaluations():
    lines = ["settings"]
    for step in range(10, 1010, 10):
        lines.append(f"step {step}/1000: loss 1.0")
        if step % 250 == 0:
            lines.append(f"step {step}: validation loss 1.0")
    short = OUTPUTS.shorten("\n".join(lines) + "\n").splitlines()
    assert short[:4] == ["settings", "step 10/1000: loss 1.0", "step 20/1000: loss 1.0",
                         "step 30/1000: loss 1.0"]  # fmt: skip
    assert short[4] == "[... 22 lines ...]" and short[5] == "step 250: validation loss 1.0"
    assert [s for s in short if "validation" in s] == [x for x in lines if "validation" in x]
    assert short[-4:] == ["step 980/1000: loss 1.0", "step 990/1000: loss 1.0",
                          "step 1000/1000: loss 1.0", "step 1000: validation loss 1.0"]  # fmt: skip


@pytest.mark.parametrize("page", sorted(TUTORIALS.glob("*.md")), ids=lambda p: p.stem)
def test_every_tutorial_starts_with_its_time(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("# "))
    first = next(line for line in lines[heading + 1 :] if line.strip())
    run = f'--8<-- "docs/outputs/tutorials/{page.stem}-time.md"'
    assert first == run if page.stem in RUN else first.startswith("*Time: "), first


def test_every_block_of_a_page_is_read():
    """The shown outputs' text blocks (```text title="Output") do not hide the blocks after
    them from the pages' parsing (tests/docs/pages.py FENCE)."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        opened = re.findall(r"^ *```(python|bash)\s*$", text, re.M)  # in a fold too
        assert [b.kind for b in OUTPUTS.blocks(page)] == opened, page
