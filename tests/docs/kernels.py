"""A notebook run top to bottom in a fresh Jupyter kernel, as the tests run the pages'
notebooks (test_notebooks.py, test_tutorial_notebooks.py): ipykernel started by nbclient in a
folder of the test's own, on one thread, with the checkout's package."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .pages import ROOT, load_script

NOTEBOOKS = load_script("notebooks")
OUTPUTS = NOTEBOOKS.OUTPUTS
TIMEOUT = 900  # seconds a cell may take (the longest, road-to-qk's, trains nothing here)
ONE_THREAD = "import torch\ntorch.set_num_threads(1)"


def kernel_env(home: Path, scale: str | None = None) -> dict[str, str]:
    """The kernel's environment: the checkout's package, a home folder of the test's own, one
    thread, and (the tutorials) the walk's step scaling."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HOME": str(home)}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("GLASSFORMER_TEST_SCALE", None)
    if scale:
        env["GLASSFORMER_TEST_SCALE"] = scale
    return env


ONE_THREAD = "import torch\ntorch.set_num_threads(1)"
def run(nb: dict, folder: Path, env: dict, setup: str) -> list[dict]:
    """``nb`` executed top to bottom in a fresh kernel started in ``folder``, after ``setup``
    (a cell of its own, left out of the answer): its cells as run."""
    import nbformat
    from nbclient import NotebookClient

    node = nbformat.reads(NOTEBOOKS.dumps(nb), as_version=4)
    node.cells.insert(0, nbformat.v4.new_code_cell(setup, id="setup"))
    for cell in node.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    client = NotebookClient(
        node, timeout=TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute(env=env)
    return json.loads(nbformat.writes(node))["cells"][1:]


def printed(cell: dict) -> str:
    """What a cell printed (its stdout)."""
    return "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
