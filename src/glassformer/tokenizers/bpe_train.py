"""Training byte-level BPE merges ("Tokenization - Subword-level" in the notes, "Formal
Algorithms for Transformers").

Byte-pair encoding (Sennrich et al. 2016; byte-level as in GPT-2): start from the 256 bytes
and repeatedly replace the most frequent adjacent pair of tokens by a new token.

Not the naive loop (recount every pair of the whole corpus after each merge, O(merges x
corpus)). Instead:

1. pre-tokenise the texts and count each distinct piece once: ``{piece: frequency}``;
2. count pairs over the distinct pieces, weighted by frequency, and keep an index
   ``pair -> {pieces that contain it}``;
3. keep the counts in a max-heap with lazy invalidation: an entry ``(-count, a, b)`` may be
   stale; when popped, it is checked against the live count and re-pushed if the count fell;
4. after a merge, only the pieces that contained the pair are rewritten, and only their pair
   counts are updated. The counts of pairs that do not involve the new token can only fall, so
   a heap entry is always an upper bound and the first valid entry popped is the true maximum;
   pairs involving the new token are pushed fresh.

Tie-breaking (deterministic, documented): the pair with the highest count wins; among equal
counts the smallest ``(id_a, id_b)`` in lexicographic order wins. With the standard layout
(byte ``x`` has id ``5 + x``, merge ``k`` makes id ``261 + k``) this means byte pairs before
pairs involving newer tokens, and lower byte values first.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from itertools import pairwise

Pair = tuple[int, int]
Merge = tuple[int, int, int]  # (id_a, id_b, new_id)


def count_pieces(texts: Iterable[str], split: Callable[[str], list[str]]) -> Counter[str]:
    """Pre-tokenise ``texts`` with ``split`` (text -> pieces) and count the distinct pieces."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(split(text))
    return counts


def train_merges(
    piece_counts: Mapping[str, int],
    byte_ids: list[int],
    first_id: int,
    n_merges: int,
    min_frequency: int = 1,
) -> list[Merge]:
    """Learn up to ``n_merges`` merges; new ids are ``first_id, first_id + 1, ...``.

    Stops early when no pair occurs at least ``min_frequency`` times.
    """
    words: list[list[int]] = []
    freqs: list[int] = []
    for piece, f in piece_counts.items():
        b = piece.encode("utf-8")
        if len(b) > 1:  # a single byte has no pair and can never change
            words.append([byte_ids[x] for x in b])
            freqs.append(f)

    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for idx, w in enumerate(words):
        f = freqs[idx]
        for p in pairwise(w):
            counts[p] += f
            where[p].add(idx)
    heap = [(-c, a, b) for (a, b), c in counts.items()]
    heapq.heapify(heap)

    merges: list[Merge] = []
    new_id = first_id
    while len(merges) < n_merges and heap:
        neg, a, b = heapq.heappop(heap)
        live = counts.get((a, b), 0)
        if live != -neg:  # stale entry: counts only fall, so re-queue at the live count
            if live > 0:
                heapq.heappush(heap, (-live, a, b))
            continue
        if live < min_frequency:
            break
        merges.append((a, b, new_id))
        touched: set[Pair] = set()
        for idx in where.pop((a, b)):
            for p in _merge_in_place(words, idx, freqs[idx], a, b, new_id, counts):
                where[p].add(idx)
                touched.add(p)
        counts.pop((a, b), None)
        for p in touched:
            heapq.heappush(heap, (-counts[p], p[0], p[1]))
        new_id += 1
    return merges


def _merge_in_place(
    words: list[list[int]],
    idx: int,
    f: int,
    a: int,
    b: int,
    new: int,
    counts: dict[Pair, int],
) -> list[Pair]:
    """Replace every non-overlapping (a, b) of ``words[idx]``, left to right, by ``new`` and
    update the pair counts locally (weight ``f``). Returns the pairs that gained counts (all
    contain ``new``); none if the word has no (a, b) (the pair index is lazy: an earlier merge
    may have taken it).

    Around an occurrence at i: (w[i-1], a) becomes (w[i-1], new) and (b, w[i+2]) becomes
    (new, w[i+2]); when two occurrences touch (..a b a b..) the pair between them, (b, a),
    becomes (new, new) and is counted once.
    """
    w = words[idx]
    n = len(w)
    out: list[int] = []
    gained: list[Pair] = []
    i = 0
    last_end = -1  # old index just after the previous occurrence
    while i < n:
        x = w[i]
        if x == a and i + 1 < n and w[i + 1] == b:
            if i > 0:
                if last_end == i:
                    p = (new, new)
                else:
                    counts[(w[i - 1], a)] -= f
                    p = (w[i - 1], new)
                counts[p] += f
                gained.append(p)
            if i + 2 < n:
                y = w[i + 2]
                counts[(b, y)] -= f
                if not (y == a and i + 3 < n and w[i + 3] == b):  # else the next one adds it
                    p = (new, y)
                    counts[p] += f
                    gained.append(p)
            out.append(new)
            i += 2
            last_end = i
        else:
            out.append(x)
            i += 1
    if last_end >= 0:
        words[idx] = out
    return gained
