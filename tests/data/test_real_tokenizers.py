"""The token cache with the tokenizer.json files of real pretrained folders as they ship
(tests/real_models.py): SmolLM2-135M-Instruct's byte-level BPE (digits split one by one) and
all-MiniLM-L6-v2's WordPiece (lower-casing, padding and truncation to 128 set in the file).
A corpus of 300,000 characters, read in small blocks and encoded in many pieces
through the library's batch encoder, gives the ids the ``tokenizers`` library gives the whole
text at once, none truncated."""

from __future__ import annotations

import random

import pytest
from tokenizers import Tokenizer

import glassformer.data.documents as documents
import glassformer.data.token_cache as tc
from glassformer.data.documents import TextPart
from glassformer.tokenizers.hf_dir import load_hf_tokenizer

WORDS = ["the", "of", "and", "Caf\u00e9", "na\u00efve", "\u00fcber", "x86_64", "1,234", "9.81",
         "don't", "(see", "below)", "\u4e2d\u6587", "emoji\U0001f600", "--", "U.S."]  # fmt: skip


def corpus(n_chars: int, seed: int = 0) -> str:
    """English-like lines: words of several scripts, numbers, punctuation, double spaces, tabs
    and blank lines."""
    rng = random.Random(seed)
    lines, size = [], 0
    while size < n_chars:
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 16))]
        gap = rng.choice([" ", " ", " ", "  ", "\t"])
        line = gap.join(words) + rng.choice([".", "", "!", "?\n"])
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name", ["smollm2", "minilm"])
def test_a_shipped_tokenizer_json_encodes_a_large_corpus_as_its_library_does(
    name, request, tmp_path, monkeypatch
):
    folder = request.getfixturevalue(f"{name}_folder")
    monkeypatch.setattr(documents, "READ_BYTES", 1 << 14)
    monkeypatch.setattr(tc, "ENCODE_CHARS", 1 << 13)
    text = corpus(300_000)
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    tokenizer = load_hf_tokenizer(folder)
    got = tc.token_file(TextPart(str(path), 0, len(text), str(tmp_path)), tokenizer, workers=2)

    library = Tokenizer.from_file(str(folder / "tokenizer.json"))
    library.no_truncation()
    library.no_padding()
    ids = library.encode(text, add_special_tokens=False).ids
    assert len(ids) > 70_000
    assert got.tolist() == [tokenizer.bos_id, *ids, tokenizer.eos_id]
    assert got.dtype.name == "uint16"  # 49,152 and 30,522 ids: 2 bytes a token
