"""glassformer.structured: JSON and TOML from elsewhere, nesting bounded."""

from __future__ import annotations

import pytest

from glassformer.structured import MAX_DEPTH, NestingError, check_depth, loads_json, loads_toml


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deep_json_is_refused_naming_the_source(depth):
    with pytest.raises(ValueError, match=r"run\.json nests .* at most 64 levels"):
        loads_json("[" * depth + "]" * depth, "run.json")


def test_json_at_the_limit_loads():
    data = loads_json("[" * MAX_DEPTH + "7" + "]" * MAX_DEPTH, "x")
    for _ in range(MAX_DEPTH):
        data = data[0]
    assert data == 7


def test_deep_objects_and_unclosed_brackets():
    with pytest.raises(ValueError, match="too deeply"):
        loads_json('{"a":' * 3000 + "1" + "}" * 3000, "config.json")
    with pytest.raises(ValueError, match="too deeply|not valid JSON"):
        loads_json("[" * 100_000, "body")  # never closed: refused either way
    with pytest.raises(ValueError, match="tokenizer.json is not valid JSON"):
        loads_json("{", "tokenizer.json")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000])
def test_deep_toml_is_refused(depth):
    with pytest.raises(ValueError, match="c.toml nests"):
        loads_toml("v = " + "[" * depth + "]" * depth, "c.toml")
    with pytest.raises(ValueError, match="c.toml is not valid TOML"):
        loads_toml("v = [", "c.toml")
    assert loads_toml("[train]\nlr = 0.1", "c.toml") == {"train": {"lr": 0.1}}


def test_check_depth_counts_dicts_and_lists():
    check_depth({"a": [{"b": 1}]}, "x", limit=3)
    with pytest.raises(ValueError, match="at most 2 levels"):
        check_depth({"a": [{"b": 1}]}, "x", limit=2)


def test_nesting_is_told_apart_from_a_parse_error():
    """A caller that tries another reading after a parse error (``--set`` values: TOML, then
    JSON, then the text itself) must not take a document nested too deeply for a string."""
    for deep in ("v = " + "[" * 5_000 + "]" * 5_000, "v = " + "[" * 65 + "]" * 65):
        with pytest.raises(NestingError):
            loads_toml(deep, "--set x")
    with pytest.raises(NestingError):
        loads_json("[" * 100_000 + "]" * 100_000, "--set x")
    for bad in (lambda: loads_toml("v = [", "x"), lambda: loads_json("{", "x")):
        with pytest.raises(ValueError) as err:
            bad()
        assert not isinstance(err.value, NestingError)


def test_a_number_too_long_is_a_parse_error_without_advice_to_programmers():
    for loads, text in ((loads_json, "[" + "9" * 5000 + "]"), (loads_toml, "v = " + "9" * 5000)):
        too_long = r"not valid \w+ \(a number has more than 4300 digits\)$"
        with pytest.raises(ValueError, match=too_long):
            loads(text, "body")
