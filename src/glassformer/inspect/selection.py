"""Which attention records, masks and token labels a picture shows: one stack, kind and call
of a Recording, checked against what was recorded (errors name the argument and what is
allowed). ``call=None`` puts the calls of a KV-cache run together (``Recording.full_weights``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch import Tensor

from .capture import Recording
from .records import AttentionRecord

__all__ = ["Tokens", "axis_labels", "check_index", "first_record", "has_attention", "labels_for"]
__all__ += ["pick", "select"]

Tokens = Sequence[str] | Mapping[str, Sequence[str]] | None


def has_attention(rec: Recording, stack: str, kind: str) -> bool:
    return any(r.stack == stack and r.kind == kind for r in rec.attention)


def first_record(rec: Recording, kind: str, stack: str | None, call: int | None) -> AttentionRecord:
    return rec.records(kind, stack, 0 if call is None else call)[0]


def select(
    rec: Recording, kind: str, stack: str | None, call: int | None
) -> tuple[Tensor, Tensor, str]:
    """(weights, allowed, stack name), both (L, B, H, T, S), on the CPU in float32."""
    name = first_record(rec, kind, stack, call).stack
    if call is None:
        w, ok = rec.full_weights(kind, name), rec.full_masks(kind, name)
    else:
        w, ok = rec.weights(kind, name, call), rec.masks(kind, name, call)
    return w.float().cpu(), ok.cpu(), name


def axis_labels(rec, kind, stack, call, t, s, tokens) -> tuple[list[str], list[str]]:
    """Query labels (this stack's positions) and key labels (own, or the source stack's)."""
    offset = 0 if call is None else first_record(rec, "self", stack, call).offset
    own = labels_for(tokens, stack, offset + t)
    if kind == "self":
        return own[offset:], own[:s]
    source = next((n for n in rec.stacks if n != stack), "source")
    return own[offset:], labels_for(tokens, source, s)


def labels_for(tokens: Tokens, stack: str, n: int) -> list[str]:
    seq = tokens.get(stack) if isinstance(tokens, Mapping) else tokens
    if seq is None:
        return [str(i) for i in range(n)]
    if isinstance(seq, str) or len(seq) < n:
        got = "a str" if isinstance(seq, str) else f"{len(seq)} labels"
        raise ValueError(
            f"tokens for {stack!r}: got {got}, the {stack} has {n} positions; allowed a "
            "list of one string per position"
        )
    return [str(x) for x in seq[:n]]


def check_index(name: str, value: int, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise ValueError(f"{name}={value!r} is out of range: allowed 0..{n - 1}")
    return value


def pick(name: str, values: Sequence[int] | None, n: int) -> list[int]:
    if values is None:
        return list(range(n))
    values = list(values)
    if not values:
        raise ValueError(f"{name}=[] selects nothing: allowed a list of indices in 0..{n - 1}")
    return [check_index(name, v, n) for v in values]
