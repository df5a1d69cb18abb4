"""Every tutorial's notebook (docs/scripts/notebooks.py) run top to bottom in a fresh kernel
(tests/docs/kernels.py), as a reader runs it, with the walk's step scaling
(``GLASSFORMER_TEST_SCALE``, test_walk.py): its ``!glassformer`` lines in-process with the
pictures drawn once for each kind, as the walk runs commands (tests/docs/commands.py), a
failing command failing its cell; a file the tutorial takes from an earlier one (the fine-tune
tutorial's reviews.csv) made first by that page's block; the folder the kernel starts in stays
empty (the tutorials change into their own), the checkout's ``git status`` unchanged. Their
printed numbers come from runs shortened 500 times, so only the Python cells that read no run
(no ``runs/``) are compared with the page. The Look inside tutorial as a notebook with its
commands as processes, each drawing every picture, took 108 s of CPU; in-process, about the
walk's 37 s and 4-5 s for the kernel.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from .kernels import NOTEBOOKS, ONE_THREAD, OUTPUTS, kernel_env, printed, run
from .pages import ROOT, name, steps
from .test_examples import same_up_to_rounding
from .test_walk import SCALE, git_status

TUTORIALS = [page for page in NOTEBOOKS.pages() if page.parent.name == "tutorials"]

# the tutorials' commands run as the walk runs them (tests/docs/commands.py)
IN_PROCESS = """
import importlib.util
_spec = importlib.util.spec_from_file_location("docs_commands", {commands!r})
_commands = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_commands)
_commands.in_kernel(get_ipython())
"""
# a file a tutorial takes from an earlier one (outputs.py's NEEDS), made by that page's block
MADE_BEFORE = """
import os
from pathlib import Path
_start, _folder = os.getcwd(), Path({folder!r}).expanduser()
_folder.mkdir(parents=True, exist_ok=True)
os.chdir(_folder)
exec({code!r}, {{}})
os.chdir(_start)
"""


def tutorial_setup(page: Path) -> str:
    setup = ONE_THREAD + IN_PROCESS.format(commands=str(ROOT / "tests/docs/commands.py"))
    folder = shlex.split(steps(page)[0].text, comments=True)[2]  # mkdir -p ~/F && cd ~/F
    for stem, index in OUTPUTS.NEEDS.get(page.stem, []):
        block = OUTPUTS.blocks(ROOT / "docs/tutorials" / f"{stem}.md")[index - 1]
        setup += MADE_BEFORE.format(folder=folder, code=block.text)
    return setup


@pytest.mark.slow  # a kernel per page, then its runs: 10 s to a minute a page
@pytest.mark.parametrize("page", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_notebook_runs(page, tmp_path):
    nb, _ = NOTEBOOKS.notebook(page)
    status = git_status()
    (tmp_path / "home").mkdir()
    (tmp_path / "run").mkdir()
    ran = run(nb, tmp_path / "run", kernel_env(tmp_path / "home", SCALE), tutorial_setup(page))
    blocks = iter(b for b in OUTPUTS.blocks(page) if b.kind in ("python", "bash"))
    for cell, done in zip(nb["cells"], ran, strict=True):
        if cell["cell_type"] != "code":
            continue
        block = next(blocks)
        if block.kind == "python" and "runs/" not in block.text:  # trains nothing, reads no run
            assert same_up_to_rounding(OUTPUTS.shorten(printed(done)), printed(cell)), (
                f"{name(page)} line {block.line} prints other than the page shows: python "
                f"docs/scripts/outputs.py --tutorials {page.stem}\n--- printed\n{printed(done)}"
            )
    assert not any((tmp_path / "run").iterdir()), "the tutorial writes where the reader started"
    assert git_status() == status
