"""A pairwise (all-pairs) covering set of test parameters: every value of every option once,
and every pair of values of two options together in some case, in far fewer cases than the
full product."""

from __future__ import annotations

from itertools import combinations


def pairwise(**factors: list) -> list[tuple]:
    """Rows (one value per factor, in the order given) such that every value of every factor
    appears and every pair of values of two factors appears in at least one row.

    Greedy and deterministic: each row starts from the first pair not yet covered and fills
    the other factors, largest first, with the value that covers the most new pairs (the first
    such value on a tie)."""
    values = list(factors.values())
    order = sorted(range(len(values)), key=lambda i: -len(values[i]))
    todo = {
        (i, a, j, b)
        for i, j in combinations(range(len(values)), 2)
        for a in range(len(values[i]))
        for b in range(len(values[j]))
    }
    rows = []
    while todo:
        i, a, j, b = min(todo)
        row = {i: a, j: b}
        for k in order:
            if k not in row:
                row[k] = max(
                    range(len(values[k])),
                    key=lambda v: (sum(_key(k, v, m, row[m]) in todo for m in row), -v),
                )
        todo -= {_key(k, row[k], m, row[m]) for k, m in combinations(row, 2)}
        rows.append(tuple(values[k][row[k]] for k in range(len(values))))
    if len(values) == 1:
        rows = [(v,) for v in values[0]]
    return rows


def _key(k: int, v: int, m: int, w: int) -> tuple[int, int, int, int]:
    return (k, v, m, w) if k < m else (m, w, k, v)
