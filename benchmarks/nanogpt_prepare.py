"""nanoGPT's data preparation, ``data/openwebtext/prepare.py`` from a checkout, run offline on
a local text file: the data benchmark's nanoGPT peer (bench_data.py).

    python -m benchmarks.nanogpt_prepare PREPARE_PY FOLDER CORPUS TOKENIZER_JSON PROCS

What runs as it ships: prepare.py (its ``__main__`` block), written into FOLDER, where it
writes ``train.bin`` and ``val.bin`` (beside itself): Hugging Face ``datasets`` loads the
data, splits off 0.05% of the records as ``val`` (``train_test_split``, shuffled, seed 2357),
tokenizes every record with ``encode_ordinary`` plus the end-of-text token in ``.map``, and
writes the ids of each split into a uint16 ``np.memmap``, shard by contiguous shard.

Two lines are changed, each checked to occur once (else the run stops, naming it):
``num_proc = 8`` becomes ``num_proc = PROCS`` (its comment advises about the number of cores;
the benchmark gives every peer the machine's cores), and ``total_batches = 1024`` becomes
``min(1024, len(dset))``: a split of fewer than 1,024 records (the val split of a corpus under
about 2 million lines) would ask ``datasets`` for empty shards, which it refuses.

What is replaced, because it downloads: ``datasets.load_dataset("openwebtext", ...)`` reads
CORPUS with the ``text`` loader instead (one record a paragraph, as OpenWebText has one a
web page, into the ``train`` split it would
have had), and ``tiktoken.get_encoding("gpt2")`` gives a ``tiktoken.Encoding`` made of the
byte-level BPE of TOKENIZER_JSON (its vocabulary as the ranks, GPT-2's pattern, its
``<|endoftext|>`` as the end-of-text token), the tokenizer the other peers use. Before
prepare.py runs, this checks that the Encoding gives the ids of the ``tokenizers`` library on
the first 100 kB of CORPUS, and prints ``same tokens as tokenizers: yes`` (or ``no``).
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

# tiktoken's "gpt2" pat_str, which Hugging Face's ByteLevel pre-tokenizer also splits by
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def byte_symbols() -> dict[str, int]:
    """GPT-2's byte-level alphabet: {the character standing for a byte: the byte}."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]  # printable: themselves
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def tiktoken_encoding(tokenizer_json: str | Path):
    """A ``tiktoken.Encoding`` of the byte-level BPE in ``tokenizer_json``: its vocabulary as
    the mergeable ranks (the trainer numbers each merge's token after the ones before, so the
    id order is the merge order), its added tokens as special tokens."""
    import tiktoken

    spec = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    special = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
    symbols = byte_symbols()
    ranks = {
        bytes(symbols[c] for c in token): i
        for token, i in spec["model"]["vocab"].items()
        if token not in special
    }
    return tiktoken.Encoding(
        name="bench-data", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens=special
    )


CHANGES = {  # prepare.py's line: what it becomes ({procs}: PROCS)
    "num_proc = 8": "num_proc = {procs}",
    "total_batches = 1024": "total_batches = min(1024, len(dset))",
}


def edited(source: str, procs: int) -> str:
    """prepare.py's text with the CHANGES made; ValueError naming a line not found once."""
    for line, new in CHANGES.items():
        if source.count(line) != 1:
            raise ValueError(f"prepare.py: expected the line {line!r} once; is it nanoGPT's?")
        source = source.replace(line, new.format(procs=procs))
    return source


def main(argv: list[str]) -> None:
    prepare_py, folder, corpus, tokenizer_json, procs = argv
    script = Path(folder) / "prepare.py"
    script.write_text(edited(Path(prepare_py).read_text(encoding="utf-8"), int(procs)))
    import datasets
    import tiktoken
    from tokenizers import Tokenizer

    enc = tiktoken_encoding(tokenizer_json)
    with open(corpus, encoding="utf-8") as f:
        sample = f.read(100_000)
    same = enc.encode_ordinary(sample) == Tokenizer.from_file(tokenizer_json).encode(sample).ids
    print(f"same tokens as tokenizers: {'yes' if same else 'no'}", flush=True)

    load = datasets.load_dataset

    def load_dataset(name, *args, num_proc=None, **kwargs):  # prepare.py's one call
        files = {"train": corpus}
        return load("text", data_files=files, sample_by="paragraph", num_proc=num_proc)

    datasets.load_dataset = load_dataset
    tiktoken.get_encoding = lambda name: enc
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
