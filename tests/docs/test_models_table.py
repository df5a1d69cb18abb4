"""docs/reference/models.md is what docs/scripts/models_table.py makes of the current presets
and converters, and its parameter counts are the built models' (equal to transformers' own)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "scripts" / "models_table.py"
REGENERATE = ".venv/bin/python docs/scripts/models_table.py"


@pytest.fixture(scope="module")
def table():
    """The script, imported by path (the tests run with --import-mode=importlib)."""
    spec = importlib.util.spec_from_file_location("docs_models_table_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(table):
    return {row.name: row for row in table.preset_rows() + table.hf_rows()}


def test_page_is_up_to_date(table, rows):
    for path, content in table.render(list(rows.values())).items():
        committed = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).exists() else None
        assert committed == content, f"{path} is stale: run {REGENERATE}"


def test_models_are_built_on_the_meta_device(table, rows):
    from glassformer.presets import PRESETS

    assert list(rows)[: len(PRESETS)] == list(PRESETS)
    for row in rows.values():
        assert all(p.is_meta for p in row.model.parameters()), row.name


def test_counts_are_the_published_ones_and_transformers_own(table, rows):
    published = {
        "GPT-2 small": 124_439_808,
        "BERT base": 109_482_240,
        "BART base": 139_420_416 + 50_265,  # + final_logits_bias, a buffer in transformers
        "TinyLlama 1.1B": 1_100_048_384,
        "Llama 2 7B": 6_738_415_616,
    }
    for name, _, hf_class, _, config_class, fields in table.HF_MODELS:
        hf = table.hf_model(hf_class, config_class, fields)
        row = rows[name]
        assert row.model.num_parameters() == hf.num_parameters() + row.extra_hf == published[name]
    assert rows["gpt2"].model.num_parameters() == published["GPT-2 small"]  # the preset
    assert rows["BART base"].extra_hf == 50_265


def test_cells_read_the_built_model(table, rows):
    def cells(name):
        return dict(zip(table.HEADER, table.cells(rows[name]), strict=True))

    gpt2, llama, bert = cells("GPT-2 small"), cells("TinyLlama 1.1B"), cells("BERT base")
    assert (gpt2["place"], gpt2["positions"], gpt2["tied embeddings"]) == ("pre", "learned", "yes")
    assert (llama["norm"], llama["positions"], llama["activation"]) == (
        "`rms`",
        "rotary",
        "`swiglu`",
    )
    assert (llama["tied embeddings"], llama["heads (n_head / n_kv_head)"]) == (
        "no",
        "32 / 4 (grouped)",
    )
    assert (llama["context"], llama["parameters"]) == ("2,048", "1,100,048,384 (1.10B)")
    assert (bert["place"], bert["tied embeddings"]) == ("post, + embeddings", "(no unembedding)")
    assert cells("BART base")["positions"] == "learned (from row 2)"
    assert cells("vaswani-base")["also"].startswith("one embedding for source and target")
    assert cells("tiny")["parameters"] == "858,880"


def test_check_names_a_stale_page_and_writes_nothing(table, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(table, "ROOT", tmp_path)
    assert table.main(["--check"]) == 1
    assert "stale: docs/reference/models.md" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
