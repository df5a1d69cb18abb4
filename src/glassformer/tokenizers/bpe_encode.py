"""Encoding with learned merges: BPE's merge loop over one piece, and the cache of pieces.

The merge loop (byte-level BPE, as GPT-2 and tiktoken apply it): a pre-tokenised piece is
encoded as UTF-8 and each byte b becomes its id; then, again and again, of all adjacent pairs
(a, b) that some merge joins, the one whose merge was learned first (lowest rank; the leftmost
on ties) is replaced by the merge's new id, until no adjacent pair has a merge. Training
(bpe_train.py) learns the merges in that order; bpe.py splits a text into pieces and calls
``encode_piece`` once for each piece its ``PieceCache`` has not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise, repeat

__all__ = ["PieceCache", "encode_piece"]


def encode_piece(
    piece: str, byte_ids: list[int], ranks: dict[tuple[int, int], int], merge_new: list[int]
) -> tuple[int, ...]:
    """The ids of ``piece``: its bytes' ids (``byte_ids[b]``), merged by rank until none merges.
    ``ranks`` maps a pair (id_a, id_b) to the rank k of its merge, ``merge_new[k]`` its new id.
    A str that UTF-8 cannot encode (a lone surrogate) raises ValueError."""
    try:
        data = piece.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"text contains {piece[e.start : e.end]!r}, a lone surrogate: allowed only str "
            "that can be encoded as UTF-8"
        ) from None
    ids = [byte_ids[b] for b in data]
    get = ranks.get
    missing = len(merge_new)  # larger than any rank
    while len(ids) > 1:
        # rank of every adjacent pair (C loops: map / min / index); merge the leftmost
        # lowest-ranked pair, one occurrence at a time, as BPE prescribes
        pair_ranks = list(map(get, pairwise(ids), repeat(missing)))
        rank = min(pair_ranks)
        if rank == missing:
            break
        i = pair_ranks.index(rank)
        ids[i : i + 2] = (merge_new[rank],)
    return tuple(ids)


class PieceCache(dict[str, tuple[int, ...]]):
    """piece -> ids; a miss computes the ids (``compute(piece)``, via dict.__missing__), and the
    whole cache is dropped when it reaches ``limit`` entries (0: nothing is kept)."""

    def __init__(self, compute: Callable[[str], tuple[int, ...]], limit: int) -> None:
        super().__init__()
        self.compute = compute
        self.limit = limit

    def __missing__(self, piece: str) -> tuple[int, ...]:
        ids = self.compute(piece)
        if len(self) >= self.limit:
            self.clear()
        if self.limit:
            self[piece] = ids
        return ids
