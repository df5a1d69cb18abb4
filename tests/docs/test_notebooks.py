"""The pages as notebooks (docs/scripts/notebooks.py): how a page becomes one, and every
Concepts page's notebook run top to bottom in a fresh kernel, printing what the page shows.

The Concepts pages' Python blocks are checked here, not in test_examples.py: a page's notebook
runs in its own kernel (ipykernel, started by nbclient) in an empty folder, its cells in page
order in one namespace, on one thread (as docs/scripts/outputs.py made the outputs), and each
cell must print what the page shows under its block (the notebook's recorded output), its
words exactly and its numbers up to rounding (``same_up_to_rounding``); a cell that prints
what the page does not show fails. The road to Q and K's ``compare("runs")`` gets the runs the
suite trains once (the ``road_to_qk_runs`` fixture of tests/conftest.py).

Cost (2-core Intel Xeon shared with other work, load average 6-8): the Concepts notebooks
6 min 25 s of wall time, 2 min of CPU, of which about 4-5 s a page is the kernel's start and
its import of PyTorch, and the rest the pages' blocks and the road to Q and K's runs (trained
once for the suite, also for tests/examples/test_road_to_qk.py); test_examples.py, which ran
these blocks before, went from 59 s to 22 s of CPU. The conversion tests take seconds, the
site test reads the site the docs tests build once. The tutorials' notebooks run in
test_tutorial_notebooks.py.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from .kernels import NOTEBOOKS, ONE_THREAD, OUTPUTS, kernel_env, printed, run
from .pages import ROOT, name
from .test_examples import same_up_to_rounding

CONCEPTS = [page for page in NOTEBOOKS.pages() if page.parent.name == "concepts"]

# A made-up Concepts page with every construct the pages use.
PAGE = '''# A made-up page

Symbols in [Notation](notation.md); a [head](../glossary.md#head), the
[circuits guide](../guide/circuits.md), [`Run`][glassformer.Run] and
[MultiHeadAttention][glassformer.nn.MultiHeadAttention], [PyTorch](https://pytorch.org).
Inline math \\(q_n \\cdot k_m\\), code `\\(kept\\)` and

\\[
A = \\operatorname{softmax}(S)
\\]

!!! note "Before you start"
    Activate `.venv` first.

## Show first

```python
print("seen")
```

```text title="Output"
--8<-- "docs/outputs/concepts/attention-1.txt"
```

![a picture](../images/concepts/road-to-qk.png)

```toml
[model]
```

??? success "Checks"

    ```python
    assert 1 + 1 == 2
    ```

## Exercises

1. Predict the sum.

??? tip "Solution"
    The sum is 3.

    ```python
    print(1 + 2)
    ```

    ```text title="Output"
    --8<-- "docs/outputs/concepts/attention-2.txt"
    ```

```bash
.venv/bin/python -m benchmarks
```
'''


def cells_of(text: str, section: str = "concepts") -> list[dict]:
    nb, _ = NOTEBOOKS.notebook(ROOT / "docs" / section / "made-up.md", text)
    return nb["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def test_a_page_becomes_cells():
    cells = cells_of(PAGE)
    kinds = [(c["cell_type"], source(c).split("\n")[0]) for c in cells]
    assert kinds == [
        ("markdown", "# A made-up page"),
        ("markdown", "## Show first"),
        ("code", 'print("seen")'),
        ("markdown", "![a picture](attachment:road-to-qk.png)"),
        ("markdown", "### Checks"),
        ("code", "assert 1 + 1 == 2"),
        ("markdown", "## Exercises"),
        ("markdown", "### Solution"),
        ("markdown", "The sum is 3."),
        ("code", "print(1 + 2)"),
        ("markdown", "```bash"),
    ]
    first = source(cells[0])
    assert "*The page [A made-up page](../../concepts/made-up.html) of the" in first
    assert "[Notation](../../concepts/notation.html)" in first
    assert "[head](../../glossary.html#head)" in first
    assert "[circuits guide](../../guide/circuits.html)" in first
    assert "[`Run`](../../reference/api/glassformer.html#glassformer.Run)" in first
    assert "(../../reference/api/nn.html#glassformer.nn.MultiHeadAttention)" in first
    assert "[PyTorch](https://pytorch.org)" in first
    assert "math $q_n \\cdot k_m$, code `\\(kept\\)` and\n\n$$\nA =" in first
    assert "\n$$\n\n> **Before you start**\n>\n> Activate `.venv` first." in first


def test_outputs_pictures_and_folds():
    cells = cells_of(PAGE)
    shown = (ROOT / "docs/outputs/concepts/attention-1.txt").read_text(encoding="utf-8")
    assert cells[2]["outputs"] == [
        {"name": "stdout", "output_type": "stream", "text": shown.splitlines(keepends=True)}
    ]
    picture = (ROOT / "docs/images/concepts/road-to-qk.png").read_bytes()
    attached = cells[3]["attachments"]["road-to-qk.png"]["image/png"]
    assert base64.b64decode(attached) == picture
    assert source(cells[3]).endswith("```toml\n[model]\n```")
    folded = {"jupyter": {"source_hidden": True, "outputs_hidden": True}}
    assert [c["metadata"] for c in cells] == [{}] * 5 + [folded, {}, {}, folded, folded, {}]
    solution = (ROOT / "docs/outputs/concepts/attention-2.txt").read_text(encoding="utf-8")
    assert "".join(cells[9]["outputs"][0]["text"]) == solution
    assert [c["id"] for c in cells] == [f"cell-{n}" for n in range(1, 12)]


def test_a_tutorials_commands_become_ipython_lines():
    page = """# A tutorial

--8<-- "docs/outputs/tutorials/look-inside-time.md"

```bash
mkdir -p ~/glassformer-tutorial && cd ~/glassformer-tutorial   # the tutorials' folder
glassformer train                  # runs/shakespeare-char
glassformer train --data shakespeare --set model.n_layer=6 \\
    --out "runs/$HOME {x}"
```
"""
    cells = cells_of(page, "tutorials")
    time_line = (ROOT / "docs/outputs/tutorials/look-inside-time.md").read_text(encoding="utf-8")
    assert time_line.strip() in source(cells[0])
    assert source(cells[1]).split("\n") == [
        "# the tutorials' folder",
        "!mkdir -p ~/glassformer-tutorial",
        "%cd -q ~/glassformer-tutorial",
        "!glassformer train                  # runs/shakespeare-char",
        '!glassformer train --data shakespeare --set model.n_layer=6 --out "runs/$$HOME {{x}}"',
    ]


def test_a_missing_output_or_picture_is_named():
    missing = '```python\nprint(1)\n```\n\n```text\n--8<-- "docs/outputs/concepts/no-1.txt"\n```\n'
    with pytest.raises(ValueError, match="docs/outputs/concepts/no-1.txt"):
        cells_of(missing)
    with pytest.raises(ValueError, match="the picture ../images/none.png"):
        cells_of("![none](../images/none.png)\n")


def test_every_page_is_a_valid_notebook_and_the_same_bytes_each_time():
    """Every Concepts page with code and every tutorial: a valid nbformat 4.5 notebook with a
    code cell per ```python block (and per ```bash block of a tutorial), each cell's recorded
    output the file the page shows under its block (milliseconds a page)."""
    import nbformat

    concepts = sorted((ROOT / "docs/concepts").glob("*.md"))
    with_code = [p for p in concepts if "```python" in p.read_text(encoding="utf-8")]
    tutorials = sorted((ROOT / "docs/tutorials").glob("*.md"))
    assert NOTEBOOKS.pages() == [p for p in with_code if p.stem != "index"] + tutorials
    for page in NOTEBOOKS.pages():
        nb, _ = NOTEBOOKS.notebook(page)
        text = NOTEBOOKS.dumps(nb)
        if page.stem in ("attention", "look-inside"):  # the same bytes each run
            assert text == NOTEBOOKS.dumps(NOTEBOOKS.notebook(page)[0])
        nbformat.validate(nbformat.reads(text, as_version=4))
        kinds = ("python", "bash") if page.parent.name == "tutorials" else ("python",)
        blocks = [b for b in OUTPUTS.blocks(page) if b.kind in kinds]
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert len(code) == len(blocks), name(page)
        for block, cell in zip(blocks, code, strict=True):
            path = OUTPUTS.shown(block)
            recorded = "".join("".join(o["text"]) for o in cell["outputs"])
            shown = (ROOT / path).read_text(encoding="utf-8") if path else ""
            assert recorded == shown, (name(page), block.line)
            if path:  # the block's own file (outputs.py writes and names it)
                assert path == block.output.relative_to(ROOT).as_posix(), (name(page), path)


def test_the_command_line_writes_them(tmp_path, capsys):
    assert NOTEBOOKS.main([str(tmp_path)]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.ipynb"))
    assert written == sorted(NOTEBOOKS.place(p) for p in NOTEBOOKS.pages())
    mine = tmp_path / "concepts" / "attention.ipynb"
    mine.write_text("{}", encoding="utf-8")
    assert NOTEBOOKS.main(["--keep", str(tmp_path)]) == 0
    assert mine.read_text(encoding="utf-8") == "{}"
    assert f"{len(NOTEBOOKS.pages())} kept as they were" in capsys.readouterr().out


# ------------------------------------------------------------------ running the notebooks


# compare("runs") of glassformer.examples.road_to_qk: the runs the suite trained once, copied
TRAINED_ONCE = """
import shutil
from pathlib import Path
from glassformer.examples import road_to_qk

def _trained_once(out, _train=road_to_qk.compare, **settings):
    if settings or Path(out) != Path("runs"):
        return _train(out, **settings)
    shutil.copytree(Path({shared!r}) / "runs", out)
    saved = torch.load(Path({shared!r}) / "results.pt", weights_only=True)
    return {{k: road_to_qk.ScoresResult(**v) for k, v in saved.items()}}

road_to_qk.compare = _trained_once
"""


@pytest.mark.slow  # a kernel per page, then its cells: 3 s to 20 s a page
@pytest.mark.parametrize("page", CONCEPTS, ids=lambda p: p.stem)
def test_concept_notebook_prints_what_the_page_shows(page, tmp_path, request):
    nb, _ = NOTEBOOKS.notebook(page)
    setup = ONE_THREAD
    if any("road_to_qk import compare" in source(c) for c in nb["cells"]):
        shared, _ = request.getfixturevalue("road_to_qk_runs")
        setup += TRAINED_ONCE.format(shared=str(shared))
    (tmp_path / "home").mkdir()
    (tmp_path / "run").mkdir()
    ran = run(nb, tmp_path / "run", kernel_env(tmp_path / "home"), setup)
    blocks = iter(b for b in OUTPUTS.blocks(page) if b.kind == "python")
    for cell, done in zip(nb["cells"], ran, strict=True):
        if cell["cell_type"] != "code":
            continue
        block, shown, got = next(blocks), printed(cell), printed(done)
        where = f"{name(page)} line {block.line}"
        assert shown or not got, (
            f"{where} prints: show it under the block, {OUTPUTS.include(block)}\n{got}"
        )
        assert same_up_to_rounding(got, shown), (
            f"{where} prints other than the page shows: python docs/scripts/outputs.py "
            f"--concepts {page.stem}\n--- printed\n{got}"
        )


def test_the_concept_notebooks_cover_the_pages_test_examples_leaves():
    from .test_examples import BLOCKS

    run_there = {page for page, _, _ in BLOCKS}
    concepts = {name(p) for p in (ROOT / "docs/concepts").glob("*.md") if "```python" in
                p.read_text(encoding="utf-8")}  # fmt: skip
    assert concepts == {name(p) for p in CONCEPTS}
    assert not concepts & run_there


# ------------------------------------------------------------------ the site


def links(nb: dict) -> list[str]:
    """The targets of the notebook's Markdown links and pictures."""
    text = "".join(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    return NOTEBOOKS.MARKDOWN.LINK_TARGET.findall(text)


def reaches_the_site(nb: dict, folder: Path, page: str) -> int:
    """Every link of ``nb`` (lying in ``folder``) reaches a file, and the anchor in it; how
    many it has."""
    reached = 0
    for target in links(nb):
        if target.startswith(("attachment:", "https:", "http:")):
            continue
        path, _, anchor = target.partition("#")
        file = (folder / path).resolve()
        assert file.is_file(), f"{page}: {target} ({file}) is not in the site"
        if anchor:
            assert f'id="{anchor}"' in file.read_text(encoding="utf-8"), (page, target)
        reached += 1
    return reached


def test_make_labs_notebooks_reach_the_built_site(built_site, tmp_path):
    """``make lab``'s notebooks (notebooks.py --site: written outside the site) link the built
    site's pages, and the pictures written beside them."""
    lab = tmp_path / "notebooks"
    NOTEBOOKS.write(lab, site=built_site)
    for page in NOTEBOOKS.pages():
        nb = json.loads((lab / NOTEBOOKS.place(page)).read_text(encoding="utf-8"))
        assert reaches_the_site(nb, (lab / NOTEBOOKS.place(page)).parent, name(page)), name(page)


def test_make_lab_writes_them_beside_the_site_it_serves():
    """``make lab`` (a dry run: ``make -n``) writes the notebooks into notebooks/ with their
    links into site/, and serves the checkout, so that ``notebooks/concepts/x.ipynb``'s
    ``../../site/...`` is a file JupyterLab can open."""
    import subprocess

    dry = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert "docs/scripts/notebooks.py --keep --site site notebooks" in dry.stdout
    assert f'--ServerApp.root_dir="{ROOT}"' in dry.stdout
    assert "--LabApp.default_url=/lab/tree/notebooks" in dry.stdout


def test_the_site_carries_every_notebook_and_links_it_from_its_page(built_site):
    """Each notebook in the built site (site/notebooks/<section>/<page>.ipynb), the same bytes
    as the generator writes; its page's link to it under the title; every link of the notebook
    reaching a file of the site, and the anchor in it. Reads the site the docs tests build
    once (``built_site``): a second or two."""
    for page in NOTEBOOKS.pages():
        nb, _ = NOTEBOOKS.notebook(page)
        shipped = built_site / "notebooks" / NOTEBOOKS.place(page)
        assert shipped.read_text(encoding="utf-8") == NOTEBOOKS.dumps(nb), shipped
        html = (built_site / page.parent.name / f"{page.stem}.html").read_text(encoding="utf-8")
        link = re.search(r'<p class="notebook-link"><a href="([^"]+)" download', html)
        assert link, f"{name(page)}: no link to its notebook"
        assert (built_site / page.parent.name / link[1]).resolve() == shipped.resolve()
        assert "<code>make lab</code>" in html[link.end() : link.end() + 400]
        reaches_the_site(nb, shipped.parent, name(page))
    for plain in ("concepts/index.html", "concepts/notation.html", "guide/models.html"):
        assert "notebook-link" not in (built_site / plain).read_text(encoding="utf-8"), plain
