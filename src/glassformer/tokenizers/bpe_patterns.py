"""Pre-tokenisation regexes for byte-level BPE ("Tokenization - Subword-level", "Formal
Algorithms for Transformers").

BPE never merges across the pieces that these patterns cut a text into: words with their
leading space, runs of digits, runs of punctuation, runs of whitespace. The named patterns are
the ones of GPT-2 and of tiktoken's cl100k_base (GPT-3.5 / GPT-4); any other regex string can be
given instead. They are compiled with the ``regex`` module (``\\p{L}``, possessive quantifiers).
"""

from __future__ import annotations

import regex

PATTERNS: dict[str, str] = {
    # GPT-2 (as in its encoder.py and Hugging Face's ByteLevel pre-tokenizer).
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    # cl100k_base (GPT-3.5 / GPT-4) as in tiktoken, except \p{N}{1,3} for tiktoken's \p{N}{1,3}+:
    # the same matches (nothing follows it in its branch), and Oniguruma (Hugging Face) would
    # read "{1,3}+" as a repeated interval, i.e. \p{N}+.
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
}
PATTERN_ALIASES = {"gpt4": "cl100k"}


def resolve_pattern(
    pattern: str, *, raw: bool = False
) -> tuple[str | None, str, regex.Pattern[str]]:
    """(name or None, regex string, compiled) for a pattern name or a regex string (always a
    regex if ``raw``). A bare word that is not a known name is an error, not a regex."""
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
    try:
        compiled = regex.compile(source)
    except regex.error as e:
        raise ValueError(f"pattern is {pattern!r}: not a valid regex ({e})") from None
    return name, source, compiled
