"""``glassformer config`` lists every key of every settings table, and what it lists as allowed
is what the checks accept: each listed choice passes and another value is refused; a listed
range's ends pass and the values just beyond them are refused."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pytest

from glassformer.cli.config_cmd import section_keys
from glassformer.cli.errors import UsageError
from glassformer.data.registry import dataset_options
from glassformer.limits import Range
from glassformer.runs import settings
from glassformer.runs.datasets import DEFAULT_OVERFLOW
from glassformer.runs.plan import VAL_FRACTION

CHECKED = [s for s, cls in settings.SECTIONS.items() if cls is not None]

# Other settings a value needs to be valid (e.g. d_model=1 needs n_head=1): the checks of a
# key's own range are what is tested, not these rules between keys.
NEEDS = {
    ("model", "d_model", 1): {"n_head": 1},
    ("model", "n_head", 1024): {"d_model": 1024},
    ("model", "vocab_size", 1): {"decoder_start_id": 0},
    ("model", "tgt_vocab_size", 1): {"share_embeddings": False, "decoder_start_id": 0},
    ("model", "tgt_vocab_size", 2**24): {"share_embeddings": False},
    ("model", "positional_layout", "split"): {"positional": "sinusoidal"},
    ("model", "norm", "batch"): {"family": "encoder"},
    ("train", "momentum", 0.0): {"optimizer": "sgd"},
    ("train", "momentum", 1 - 0.001): {"optimizer": "sgd"},
}


def tables(text: str) -> dict[str, list[str]]:
    """The listing's lines under each ``[section]`` heading."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("["):
            section = line[1 : line.index("]")]
            found[section] = []
        elif line.strip() and found:
            found[section].append(line.strip())
    return found


def make(section: str, name: str, value: Any) -> None:
    cls = settings.SECTIONS[section]
    cls(**{name: value, **NEEDS.get((section, name, value), {})})


def refused(section: str, name: str, value: Any) -> bool:
    try:
        make(section, name, value)
    except (ValueError, UsageError) as err:
        return name in str(err)
    return False


def test_every_field_and_dataset_option_is_listed(cli):
    result = cli.run("config")
    assert result.code == 0, result.err
    listed = tables(result.out)
    assert list(listed) == list(settings.SECTIONS)
    for section in CHECKED:
        names = {line.split()[0] for line in listed[section]}
        derived = [ln for ln in listed[section] if ln.startswith("set by the run")]
        for f in dataclasses.fields(settings.SECTIONS[section]):
            if f"{section}.{f.name}" in settings.DERIVED:
                assert f.name in derived[0], (section, f.name)
            else:
                assert f.name in names, (section, f.name)
    data_lines = listed["data"]
    headers = [ln for ln in data_lines if ln.endswith((":", ": none"))]
    for name, params in dataset_options().items():
        assert any(("a file" if name == "file" else name) in h for h in headers), name
        for p in params:
            assert any(line.split()[0] == p.name for line in data_lines), (name, p.name)
    # the command line's own defaults for data: truncation and the held-out part of a file
    data_rows = {ln.split()[0]: ln.split()[:3] for ln in data_lines}
    assert data_rows["overflow"] == ["overflow", "str", f'"{DEFAULT_OVERFLOW}"']
    assert data_rows["val_fraction"] == ["val_fraction", "float", str(VAL_FRACTION)]
    rows = {ln.split()[0]: ln.split() for ln in listed["sample"] + listed["model"]}
    assert rows["temperature"] == ["temperature", "float", "0.8", ">=", "0"]
    assert rows["norm"][:7] == ["norm", "str", '"layer"', "layer,", "rms,", "batch", "batch:"]


def test_listed_choices_and_ranges_are_what_the_checks_accept():
    ranges = 0
    for section in CHECKED:
        for key in section_keys(section):
            if isinstance(key.allowed, tuple):
                for choice in key.allowed:
                    make(section, key.name, choice)
                assert refused(section, key.name, "bogus")
            elif isinstance(key.allowed, Range):
                ranges += 1
                inside, outside = ends(key.allowed, key.type.startswith("int"))
                for value in inside:
                    make(section, key.name, value)
                for value in outside:
                    assert refused(section, key.name, value), (section, key.name, value)
    assert ranges >= 30


def ends(allowed: Range, integer: bool) -> tuple[list, list]:
    """Values at the ends of ``allowed`` (inside) and just beyond them (outside)."""
    step = 1 if integer else 0.001
    inside, outside = [], []
    for end, open_, sign in (
        (allowed.low, allowed.open_low, 1),
        (allowed.high, allowed.open_high, -1),
    ):
        if end is None:
            continue
        inside.append(end + sign * step if open_ else end)
        outside.append(end if open_ else end - sign * step)
    return inside, outside


def test_one_table_and_the_defaults_of_another_preset(cli):
    result = cli.run("config", "model", "--model", "tiny-seq2seq")
    assert list(tables(result.out)) == ["model"]
    d_ff = next(ln for ln in tables(result.out)["model"] if ln.startswith("d_ff "))
    assert d_ff.split()[:6] == ["d_ff", "int", "|", "None", "512", "in"]
    cli.assert_user_error(cli.run("config", "optim"), "invalid choice", "'optim'")


@dataclasses.dataclass
class DataSettings:
    overflow: str = "truncate"  # what to do with an example longer than max_len

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"overflow": ("truncate", "error")}


def test_a_new_settings_field_is_listed_without_more_code(cli, monkeypatch):
    monkeypatch.setitem(settings.SECTIONS, "data", DataSettings)
    lines = tables(cli.run("config", "data").out)["data"]
    assert lines[0].split() == [
        "overflow", "str", '"truncate"', "truncate,", "error", "what", "to", "do", "with", "an",
        "example", "longer", "than", "max_len",
    ]  # fmt: skip
    assert "reverse, sort:" in lines and "a file (.txt, .tsv, .csv):" in lines


@pytest.mark.parametrize("setting", ["top_k=-1", "top_p=0", "temperature=-0.5"])
def test_sample_settings_are_refused_before_training(cli, setting, tmp_path):
    result = cli.run(
        "train", "--data", "reverse", "--out", tmp_path / "r", "--set", f"sample.{setting}"
    )
    cli.assert_user_error(result, f"sample.{setting} must be")
    assert not (tmp_path / "r").exists()


def test_notes_are_the_first_paragraph_of_each_field_docstring():
    notes = {k.name: k.note for k in section_keys("train")}
    assert notes["seed"] == "seeds the initial weights, the batches and dropout"
    assert notes["lora_rank"].startswith("LoRA's rank r")  # a name keeps its capitals
    model = {k.name: k.note for k in section_keys("model")}
    assert model["norm"] == "batch: encoder only (its statistics would show a decoder the future)"
    assert model["attention_scores"] == "self-attention: separate W^Q, W^K | shared W^QK | dot xᵀx′"


def test_notes_fall_back_to_the_comment_on_the_field_line():
    notes = {k.name: k.note for k in section_keys("sample")}
    assert notes["seed"] == "None: the run's train.seed"
