"""A BPE pre-tokenisation pattern from a tokenizer file is data from elsewhere: the named
patterns are trusted, a custom one is checked when it is built or loaded (no capturing group,
forward matching, its pieces cover a probe text, quickly) and every split is bounded in time
and must cover its text. Each refusal is a ValueError that names the problem; nothing hangs.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import regex

from glassformer.tokenizers import PATTERNS, BPETokenizer, bpe_patterns, load_tokenizer

BOUND_S = 20.0  # a generous bound that only a hang exceeds
# nested repetition that the probe text sets off (runs of "a"), and the same on "q" (which the
# probe text leaves alone: the pattern loads, and then a text of q's sets it off)
BACKTRACKS_ON_PROBE = r"(?:a|a)+$|(?s:.)"
BACKTRACKS_LATER = r"(?:q|q)+$|(?s:.)"


def tokenizer_file(tmp_path: Path, pattern: str) -> Path:
    """A tokenizer.json of a trained BPE tokenizer whose pattern is replaced by ``pattern``."""
    data = BPETokenizer().train("the cat sat on the mat " * 5, vocab_size=270).to_dict()
    data["pattern_name"], data["pattern"] = None, pattern
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _child(conn, fn):  # runs in a forked process: send back the outcome
    try:
        conn.send(("returned", fn()))
    except BaseException as err:
        conn.send((type(err).__name__, str(err)))


def within(seconds: float, fn: Callable[[], object]) -> tuple[str, object]:
    """(outcome, value) of ``fn()`` run in a forked process: ("returned", result) or
    (exception name, message). Fails the test when ``fn`` has not ended after ``seconds``."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn))
    start = time.monotonic()
    proc.start()
    try:
        if not parent.poll(seconds):
            pytest.fail(f"still running after {seconds:g} s (a hang)")
        return parent.recv()
    finally:
        proc.kill()
        proc.join()
        assert time.monotonic() - start < seconds + 5


@pytest.fixture
def short_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splits of a custom pattern get 0.3 s in all, so that a time-out comes quickly."""
    monkeypatch.setattr(bpe_patterns, "PATTERN_SECONDS", 0.3, raising=False)


# ---- the named patterns ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "gpt4"])
def test_named_patterns_are_taken_by_name_and_cover_the_probe(name: str, tmp_path: Path) -> None:
    probe = bpe_patterns.PROBE_TEXT
    tok = BPETokenizer(name)
    assert tok.pattern == PATTERNS[{"gpt4": "cl100k"}.get(name, name)]
    assert tok._split.trusted
    assert "".join(regex.findall(tok.pattern, probe)) == probe
    assert tok.decode(tok.encode(probe)) == probe
    # the same string given as a regex (pattern_name null in the file) is trusted too
    loaded = load_tokenizer(tokenizer_file(tmp_path, tok.pattern))
    assert isinstance(loaded, BPETokenizer) and loaded._split.trusted
    assert loaded.decode(loaded.encode(probe)) == probe


def test_probe_text_has_what_the_checks_need() -> None:
    scripts = [r"\p{Latin}", r"\p{Greek}", r"\p{Cyrillic}", r"\p{Han}", r"\p{Arabic}"]
    for needed in [*scripts, r"\p{N}", r"\p{P}", r"\p{Emoji_Presentation}", r"\n", r"\r\n"]:
        assert regex.search(needed, bpe_patterns.PROBE_TEXT), needed
    assert "   " in bpe_patterns.PROBE_TEXT and "a" * 40 in bpe_patterns.PROBE_TEXT


def test_a_custom_pattern_that_covers_every_text_still_works(tmp_path: Path) -> None:
    loaded = load_tokenizer(tokenizer_file(tmp_path, r"\S+|\s+"))
    text = "a\x00b  ÿ 👋🏽\r\n"
    assert loaded.decode(loaded.encode(text)) == text
    both = loaded.encode("the cat<EOS>the", allowed_special=True)
    assert both == [*loaded.encode("the cat"), 2, *loaded.encode("the")]
    assert len(loaded.encode("the")) == 1  # a merged token


# ---- custom patterns refused when a tokenizer file is loaded -----------------------------------


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(\w+)|\W", r"has 1 capturing group\(s\): allowed none .* write \(\?:\.\.\.\)"),
        (r"(?P<word>\w+)|\W", r"has 1 capturing group\(s\): allowed none"),
        (r"(\w)(\w*)|\W", r"has 2 capturing group\(s\): allowed none"),
        (r"\w+|[ ]", r"does not give back a probe text from its pieces \(first difference at "
         r"offset 5\): a pre-tokenisation pattern must match every character"),
        (r"(?r)\w+|\W+", r"matches in reverse \(\(\?r\)\): allowed only forward matching"),
        (r"(?:(?:a{100}){100}){100}|(?s:.)", r"counted repeats .* multiply to more than 10000"),
        ("(?s:.)|" + "x" * 10_000, r"pattern has 10007 characters: allowed at most 10000"),
    ],
)  # fmt: skip
def test_a_bad_pattern_in_a_tokenizer_file_is_refused(
    tmp_path: Path, pattern: str, message: str
) -> None:
    path = tokenizer_file(tmp_path, pattern)
    with pytest.raises(ValueError, match=message):
        load_tokenizer(path)
    with pytest.raises(ValueError, match=message):
        BPETokenizer(pattern)


def test_a_backtracking_pattern_in_a_tokenizer_file_is_refused_at_load(tmp_path: Path) -> None:
    path = tokenizer_file(tmp_path, BACKTRACKS_ON_PROBE)
    outcome, message = within(BOUND_S, lambda: load_tokenizer(path))
    assert outcome == "ValueError", (outcome, message)
    assert "took longer than 1 s on a probe text" in message
    assert "catastrophic backtracking" in message


def test_a_pattern_that_backtracks_on_one_text_times_out_with_a_clear_error(
    tmp_path: Path, short_budget: None
) -> None:
    tok = load_tokenizer(tokenizer_file(tmp_path, BACKTRACKS_LATER))
    assert tok.decode(tok.encode("the queue")) == "the queue"  # ordinary text is fine
    for encode in [
        lambda: tok.encode("q" * 60 + "!"),
        # the parts between special tokens share one budget: five parts do not take five
        lambda: tok.encode(("q" * 60 + "!<EOS>") * 5, allowed_special=True),
        lambda: BPETokenizer(BACKTRACKS_LATER).train("q" * 60 + "!", vocab_size=262),
    ]:
        start = time.monotonic()
        outcome, message = within(BOUND_S, encode)
        assert outcome == "ValueError", (outcome, message)
        assert message.startswith("the tokenizer's pattern took longer than 0.3")
        assert "s on this text: the pattern '(?:q|q)+$|(?s:.)' backtracks too much" in message
        assert time.monotonic() - start < BOUND_S


def test_a_pattern_that_drops_characters_of_a_text_is_refused_at_encode(tmp_path: Path) -> None:
    """The probe text has no U+0001, so this pattern loads; it drops a U+0001 before "y"."""
    tok = load_tokenizer(tokenizer_file(tmp_path, r"[^\x01]+|\x01(?!y)"))
    assert tok.decode(tok.encode("ab\x01z")) == "ab\x01z"
    message = r"pattern '\[\^\\\\x01\]\+\|\\\\x01\(\?!y\)' drops characters of this text \(first"
    with pytest.raises(ValueError, match=message + r" at offset 2\)"):
        tok.encode("ab\x01y")
    with pytest.raises(ValueError, match=message):
        tok.encode("ok<EOS>ab\x01y", allowed_special=True)
    with pytest.raises(ValueError, match=message):
        BPETokenizer(r"[^\x01]+|\x01(?!y)").train("ab\x01y", vocab_size=262)
