"""The data benchmark's floor (bench_data.py): the ``tokenizers`` library alone encoding a
corpus into a token file, with nothing around it.

    python -m benchmarks.data_tokenizers_alone CORPUS TOKENIZER_JSON OUT

Reads CORPUS as text ``BLOCK_CHARS`` characters at a time, cuts it into pieces of about
``PIECE_CHARS`` characters (each cut before a space, so that no word is split; a piece with no
space is cut at the size), encodes each block's pieces in one ``encode_batch_fast`` call (the
library's own threads, on every core with TOKENIZERS_PARALLELISM=true), and appends the ids to
OUT as uint16. Prints ``tokens N``. It is the least time a tokenizer.json path can take on the
machine with this library: glassformer's tokenizer.json path encodes with the same library,
and also trains a step, checks its cache and writes a held-out part.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

PIECE_CHARS = 1 << 19  # characters a piece, about
BLOCK_CHARS = 1 << 24  # characters read, and encoded in one batch, at a time (32 pieces)


def pieces(text: str, size: int) -> tuple[list[str], str]:
    """``text`` cut into pieces of at most ``size`` characters, each cut before a space (at the
    size when a piece has none), and the rest, shorter than ``size``, for the next block."""
    out, start = [], 0
    while len(text) - start >= size:
        at = text.rfind(" ", start + 1, start + size)
        at = at if at > start else start + size
        out.append(text[start:at])
        start = at
    return out, text[start:]


def batches(corpus: Path, piece: int, block: int) -> Iterator[list[str]]:
    """The corpus's pieces, a block's worth at a time; the last batch holds the rest."""
    rest = ""
    with open(corpus, encoding="utf-8", newline="") as f:
        while text := f.read(block):
            batch, rest = pieces(rest + text, piece)
            if batch:
                yield batch
    if rest:
        yield [rest]


def encode(
    corpus: Path, tokenizer_json: Path, out: Path, piece: int = PIECE_CHARS,
    block: int = BLOCK_CHARS,
) -> int:  # fmt: skip
    """Encode ``corpus`` into ``out`` (uint16 ids, no special tokens added); the ids in all."""
    import numpy as np
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    if tok.get_vocab_size() > 1 << 16:
        raise ValueError(
            f"{tokenizer_json}: {tok.get_vocab_size():,} ids do not fit uint16: allowed at "
            "most 65,536"
        )
    n = 0
    with open(out, "wb") as f:
        for batch in batches(Path(corpus), piece, block):
            for e in tok.encode_batch_fast(batch, add_special_tokens=False):
                np.asarray(e.ids, dtype=np.uint16).tofile(f)
                n += len(e.ids)
    return n


def main(argv: list[str]) -> None:
    corpus, tokenizer_json, out = argv
    print(f"tokens {encode(Path(corpus), Path(tokenizer_json), Path(out))}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
