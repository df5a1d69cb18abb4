"""bench_versions.py: two versions of glassformer side by side, each case's process importing
the library from the sources it was given."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from benchmarks import bench_versions
from benchmarks.common import Shape

ROOT = Path(__file__).resolve().parents[1]
MINI = Shape(n_layer=1, n_head=2, d_model=16, context=8, batch=2, vocab=11)


def test_a_revision_is_extracted_as_committed(tmp_path):
    src = bench_versions.base_sources("HEAD", tmp_path)
    committed = subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:src/glassformer/__init__.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert (src / "glassformer" / "__init__.py").read_text() == committed


def test_each_version_runs_from_its_own_sources(tmp_path, monkeypatch, capsys):
    base = tmp_path / "base"
    shutil.copytree(ROOT / "src", base, ignore=shutil.ignore_patterns("__pycache__"))
    # a base that differs: its case process must import this copy, or the run fails
    (base / "glassformer" / "version_mark.py").write_text("MARK = 'base'\n")
    cases = {"train-mini": {"case": "train", "shape": asdict(MINI)}}
    monkeypatch.setattr(bench_versions, "_cases", lambda: cases)
    out = tmp_path / "v.json"
    bench_versions.main(["--base", str(base), "--seconds", "0", "--threads", "1",
                         "--out", str(out)])  # fmt: skip
    result = json.loads(out.read_text())["cases"][0]
    assert "error" not in result, result
    assert result["rounds"] >= 10 and len(result["ratio_by_order"]) == 2  # both start orders
    assert result["this_ms"] > 0 and result["base_ms"] > 0
    assert result["ratio"]["min"] <= result["ratio"]["median"] <= result["ratio"]["max"]
    assert "train-mini" in capsys.readouterr().out


def test_a_case_from_other_sources_than_asked_is_refused(tmp_path, monkeypatch):
    from benchmarks import versions_case

    monkeypatch.setattr(sys, "path", list(sys.path))  # the case puts its sources first

    with pytest.raises(RuntimeError, match="not " + str(tmp_path)):
        versions_case.make_paired_step({"src": str(tmp_path), "case": "train",
                                        "shape": asdict(MINI)})  # fmt: skip


def test_unknown_cases_and_bases_are_named(tmp_path, capsys):
    with pytest.raises(SystemExit, match="unknown case.*nope.*allowed: train-tiny"):
        bench_versions.main(["--base", "HEAD", "--cases", "nope"])
    with pytest.raises(SystemExit, match="neither a folder"):
        bench_versions.main(["--base", str(tmp_path / "missing"), "--cases", "train-tiny"])
