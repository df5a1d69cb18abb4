"""Pre-tokenisation regexes for byte-level BPE ("Tokenization - Subword-level", "Formal
Algorithms for Transformers").

BPE never merges across the pieces that these patterns cut a text into: words with their
leading space, runs of digits, runs of punctuation, runs of whitespace. The named patterns are
the ones of GPT-2 and of tiktoken's cl100k_base (GPT-3.5 / GPT-4); any other regex string can be
given instead. They are compiled with the ``regex`` module (``\\p{L}``, possessive quantifiers).

A pattern may come from a tokenizer file, i.e. from elsewhere, so ``SplitPattern`` trusts only
the named patterns (fixed strings that cover every text in linear time). Any other pattern is
checked when it is built: at most ``MAX_PATTERN_CHARS`` characters, no capturing group (with
one, ``findall`` returns the groups instead of the pieces), no reverse matching, counted
repeats whose bounds multiply to at most ``MAX_REPEAT_PRODUCT`` (``regex`` expands them when it
compiles), and its pieces of ``PROBE_TEXT`` must give back the text, within ``PROBE_SECONDS``.
Then every split of a text is bounded: ``PATTERN_SECONDS`` plus ``PATTERN_SECONDS_PER_CHAR``
per character of processor time (``regex``'s ``timeout=``), and the pieces must cover the text.
Either failure is a ``ValueError``, never a hang and never text silently dropped.
"""

from __future__ import annotations

import time

import regex

__all__ = ["PATTERNS", "PATTERN_ALIASES", "PROBE_TEXT", "SplitPattern", "resolve_pattern"]

PATTERNS: dict[str, str] = {
    # GPT-2 (as in its encoder.py and Hugging Face's ByteLevel pre-tokenizer).
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    # cl100k_base (GPT-3.5 / GPT-4) as in tiktoken, except \p{N}{1,3} for tiktoken's \p{N}{1,3}+:
    # the same matches (nothing follows it in its branch), and Oniguruma (Hugging Face) would
    # read "{1,3}+" as a repeated interval, i.e. \p{N}+.
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
}
PATTERN_ALIASES = {"gpt4": "cl100k"}
Deadline = tuple[float, float]  # (time.process_time() to stop at, seconds allowed in all)

MAX_PATTERN_CHARS = 10_000
MAX_REPEAT_PRODUCT = 10_000
PROBE_SECONDS = 1.0
PATTERN_SECONDS = 2.0
PATTERN_SECONDS_PER_CHAR = 5e-6

# Letters of several scripts, digits, punctuation, runs of whitespace, newlines (LF, CRLF, CR),
# control characters, emoji (with joiners, skin tones, flags), then the long runs on which a
# pattern with nested repetition backtracks for ever.
PROBE_TEXT = (
    "Hello, World! It's 2024-05-06: 3.14159 x 10^3 = 3141.59 (approx.) -- don't, we'll, I'm.\n"
    "  Tabs\there\tand\r\nCRLF;\rCR\x0bVT\x0cFF\x00NUL\x1bESC naïve café Straße "
    "Ελληνικά русский 中文字符 日本語のテキスト 한국어 العربية हिन्दी ไทย ½ ² ٣ ४\n"
    "Emoji: 👋🏽 👨‍👩‍👧 🇫🇷 ✓ — “quotes” ‘single’ «guillemets» [x] {y} <z> #@$%^&*_+=|\\/~`\n\n\n"
    "   trailing spaces   \n\u00a0\u2003\u3000 wide spaces\u2028\u2029"
    + "a" * 48
    + "!"
    + "1" * 48
    + "x"
    + " " * 48
    + "."
    + "ab " * 24
    + "!"
    + "\n" * 24
    + "z"
)


class SplitPattern:
    """A pre-tokenisation regex and the bounded way to split a text with it (module docstring).

    ``name`` (None for a custom regex), ``source`` (the regex string), ``compiled``, and
    ``trusted``: True for the named patterns, whose splits are neither timed nor checked.
    """

    def __init__(self, pattern: str, *, raw: bool = False) -> None:
        self.name, self.source, self.compiled = resolve_pattern(pattern, raw=raw)
        self.trusted = self.source in PATTERNS.values()
        if not self.trusted:
            _check_custom(self)

    def deadline(self, n_chars: int) -> Deadline | None:
        """(the processor time, as ``time.process_time``, by which a text of ``n_chars``
        characters must be split, the seconds allowed); None for a trusted pattern."""
        if self.trusted:
            return None
        seconds = budget(n_chars)
        return time.process_time() + seconds, seconds

    def split(self, text: str, deadline: Deadline | None = None) -> list[str]:
        """The pieces of ``text``, in order; ``deadline`` (from ``deadline``) is shared by the
        parts of one encode call. ValueError when a custom pattern runs out of time or its
        pieces do not cover the text."""
        if self.trusted:
            return self.compiled.findall(text)
        at, seconds = deadline or self.deadline(len(text))  # type: ignore[misc]
        left = at - time.process_time()
        try:
            if left <= 0:
                raise TimeoutError
            pieces = self.compiled.findall(text, timeout=left)
        except TimeoutError:
            raise ValueError(
                f"the tokenizer's pattern took longer than {seconds:.3g} s on this text: the "
                f"pattern {_short(self.source)} backtracks too much on it; use a named pattern "
                f"({_names()}) or one without nested repetition"
            ) from None
        if sum(map(len, pieces)) != len(text):  # ordered, disjoint matches: equal = a tiling
            raise ValueError(
                f"the tokenizer's pattern {_short(self.source)} drops characters of this text "
                f"(first at offset {_first_gap(pieces, text)}): a pre-tokenisation pattern must "
                f"match every character; use a named pattern ({_names()})"
            )
        return pieces


def budget(n_chars: int) -> float:
    """Seconds of processor time a custom pattern may take on a text of ``n_chars``."""
    return PATTERN_SECONDS + PATTERN_SECONDS_PER_CHAR * n_chars


def resolve_pattern(
    pattern: str, *, raw: bool = False
) -> tuple[str | None, str, regex.Pattern[str]]:
    """(name or None, regex string, compiled) for a pattern name or a regex string (always a
    regex if ``raw``). A bare word that is not a known name is an error, not a regex. Only
    compiles: ``SplitPattern`` checks a custom regex."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"pattern is {pattern!r}: allowed {sorted(PATTERNS)} or a regex")
    name: str | None = PATTERN_ALIASES.get(pattern, pattern)
    if raw:
        name, source = None, pattern
    elif name in PATTERNS:
        source = PATTERNS[name]
    elif regex.fullmatch(r"[A-Za-z0-9_]+", pattern):
        allowed = sorted([*PATTERNS, *PATTERN_ALIASES])
        raise ValueError(f"pattern is {pattern!r}: allowed a name in {allowed} or a regex string")
    else:
        name, source = None, pattern
    if source not in PATTERNS.values():
        _check_source(source)
    try:
        compiled = regex.compile(source)
    except regex.error as e:
        raise ValueError(f"pattern is {_short(pattern)}: not a valid regex ({e})") from None
    return name, source, compiled


def _check_source(source: str) -> None:
    """Refuse what would make ``regex.compile`` itself slow: a very long pattern, or counted
    repeats (``{m,n}``) that multiply to a huge expansion."""
    if len(source) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"pattern has {len(source)} characters: allowed at most {MAX_PATTERN_CHARS}"
        )
    product = 1
    for bounds in regex.findall(r"\{(\d*),?(\d*)\}", source):
        product *= max([1, *(int(b) for b in bounds if b)])
        if product > MAX_REPEAT_PRODUCT:
            raise ValueError(
                f"pattern {_short(source)} has counted repeats ({{m,n}}) whose bounds multiply "
                f"to more than {MAX_REPEAT_PRODUCT}: allowed at most that"
            )


def _check_custom(pat: SplitPattern) -> None:
    """No capture groups, forward matching, and the pieces of ``PROBE_TEXT`` give it back."""
    where = f"pattern {_short(pat.source)}"
    if pat.compiled.groups:
        raise ValueError(
            f"{where} has {pat.compiled.groups} capturing group(s): allowed none (findall would "
            "return the groups, not the pieces); write (?:...) for a group"
        )
    if pat.compiled.flags & regex.REVERSE:
        raise ValueError(f"{where} matches in reverse ((?r)): allowed only forward matching")
    try:
        pieces = pat.compiled.findall(PROBE_TEXT, timeout=PROBE_SECONDS)
    except TimeoutError:
        raise ValueError(
            f"{where} took longer than {PROBE_SECONDS:g} s on a probe text of "
            f"{len(PROBE_TEXT)} characters (catastrophic backtracking): allowed a pattern "
            f"without nested repetition, or a named pattern ({_names()})"
        ) from None
    if "".join(pieces) != PROBE_TEXT:
        raise ValueError(
            f"{where} does not give back a probe text from its pieces (first difference at "
            f"offset {_first_gap(pieces, PROBE_TEXT)}): a pre-tokenisation pattern must match "
            f"every character, in order; allowed such a pattern or a named one ({_names()})"
        )


def _first_gap(pieces: list[str], text: str) -> int:
    """The first offset at which the concatenated pieces differ from ``text``."""
    joined = "".join(pieces)
    pairs = enumerate(zip(joined, text, strict=False))
    return next((i for i, (a, b) in pairs if a != b), min(len(joined), len(text)))


def _short(source: str, limit: int = 80) -> str:
    return repr(source) if len(source) <= limit else repr(source[:limit]) + "..."


def _names() -> str:
    return ", ".join(repr(n) for n in sorted([*PATTERNS, *PATTERN_ALIASES]))
