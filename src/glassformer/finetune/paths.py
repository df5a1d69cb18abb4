"""Module paths and the patterns that pick them.

A path is how a part of a model is named: its attribute path, which is also its hook name and
the prefix of its weights' names (``blocks.0.attn.q_proj``, ``encoder.embed``). A pattern is
a path whose segments may be

    a name or an index     ``embed``, ``blocks.0``, ``ln_final``
    ``*``                  any one segment: ``blocks.*.attn`` is every block's attention
    ``A-B``                the indices A to B, both included: ``blocks.0-5``

``matches(pattern, path)`` compares the whole path; ``ends_with(pattern, path)`` its last
segments (``attn.q_proj`` ends ``blocks.3.attn.q_proj`` and ``encoder.blocks.0.attn.q_proj``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["check_pattern", "ends_with", "matches", "shown_names"]

_RANGE = re.compile(r"(\d+)-(\d+)")
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+|\*|\d+-\d+")


def check_pattern(pattern: object, where: str) -> str:
    """``pattern`` if it is a well-formed pattern, else ``ValueError`` naming ``where``."""
    if not isinstance(pattern, str):
        raise ValueError(f"{where}: {pattern!r} must be a string, e.g. 'blocks.0-3'")
    segments = pattern.split(".")
    bad = [s for s in segments if not _SEGMENT.fullmatch(s)]
    if bad:
        raise ValueError(
            f"{where}: {pattern!r} is not a module path; allowed segments: names, indices, "
            "'*' (one segment) and ranges such as '0-5', joined by dots (e.g. 'blocks.*.attn')"
        )
    for s in segments:
        found = _RANGE.fullmatch(s)
        if found and int(found.group(1)) > int(found.group(2)):
            raise ValueError(f"{where}: {pattern!r} has the empty range {s!r}; write low-high")
    return pattern


def _segment_matches(pattern: str, segment: str) -> bool:
    if pattern in ("*", segment):
        return True
    found = _RANGE.fullmatch(pattern)
    return bool(found and segment.isdigit()) and (
        int(found.group(1)) <= int(segment) <= int(found.group(2))
    )


def matches(pattern: str, path: str) -> bool:
    """Does ``pattern`` name ``path`` (every segment)?"""
    want, have = pattern.split("."), path.split(".") if path else []
    return len(want) == len(have) and all(map(_segment_matches, want, have))


def ends_with(pattern: str, path: str) -> bool:
    """Does ``pattern`` name the last segments of ``path`` (or all of them)?"""
    want, have = pattern.split("."), path.split(".") if path else []
    return len(want) <= len(have) and all(
        map(_segment_matches, want, have[len(have) - len(want) :])
    )


def shown_names(paths: Iterable[str], limit: int = 12) -> str:
    """A few of ``paths`` for a message, indices written ``*`` (``blocks.*.attn``)."""
    seen = dict.fromkeys(re.sub(r"(?<=\.)\d+(?=\.|$)", "*", p) for p in paths if p)
    names = list(seen)
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
