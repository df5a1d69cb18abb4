"""The data benchmark's Hugging Face peer (bench_data.py): ``datasets`` + ``tokenizers`` as
their documentation shows them, on a local text file.

    python -m benchmarks.data_hf_prepare CORPUS TOKENIZER_JSON CACHE

``datasets.load_dataset("text", data_files=CORPUS, cache_dir=CACHE)`` reads the file into an
Arrow table in CACHE (one record a line), and ``.map(batched=True, num_proc=2)`` encodes the
records with the ``tokenizers`` library's ``encode_batch`` into an ``ids`` column, also
written to CACHE. A second run with the same CACHE finds both there (the cache hit) and
encodes nothing. Prints ``tokens N``: the ids in all, counted from the Arrow column's lengths
(memory-mapped: nothing read into Python).
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    corpus, tokenizer_json, cache = argv
    import pyarrow.compute as pc
    from datasets import load_dataset
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_json)

    def encode(batch):
        return {"ids": [e.ids for e in tok.encode_batch(batch["text"])]}

    ds = load_dataset("text", data_files={"train": corpus}, cache_dir=cache, split="train")
    ids = ds.map(encode, batched=True, num_proc=2, remove_columns=["text"])
    n = pc.sum(pc.list_value_length(ids.data.column("ids"))).as_py()
    print(f"tokens {n}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
