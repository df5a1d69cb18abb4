"""The patching benchmark (benchmarks/bench_patching.py): its tiny shape runs one paired round
for both families and writes the expected JSON (no speed is asserted), the two libraries'
numbers equal; a bad --grids is a usage error. That the two libraries' grids agree is
tests/reference/test_transformer_lens_patching.py."""

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the benchmarks package sits beside src/, not installed

from benchmarks import bench_patching  # noqa: E402


@pytest.fixture(autouse=True)
def keep_threads():
    n = torch.get_num_threads()  # the benchmark sets torch's thread count
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_patching_smoke(tmp_path, family, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "patching.json"
    names = ("resid_pre", "path_q", "subset", "direct")
    grids = ["--grids", ",".join(names)]
    rounds = ["--threads", "1", "--seconds", "0", "--rounds", "1"]
    bench_patching.main(["--quick", "--family", family, *grids, *rounds, "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["shape"]["name"] == "tiny" and data["shape"]["family"] == family
    assert set(data["figures"]) == set(names)
    assert set(data["blocks_ms"]) == {
        f"{lib}:{grid}"
        for lib in ("glassformer", "transformer_lens")
        for grid in names
    }
    for fig in data["figures"].values():
        r = fig["speed"]
        assert fig["glassformer_ms"] > 0 and fig["transformer_lens_ms"] > 0
        assert 0 < r["min"] <= r["median"] <= r["max"]
        assert fig["max_abs_difference"] < 1e-5  # the two libraries' numbers agree


def test_unknown_grid_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_patching.main(["--quick", "--grids", "resid_pre,head_q"])
    assert exit_info.value.code == 2
    assert "--grids resid_pre,head_q: choose from ['resid_pre'" in capsys.readouterr().err
