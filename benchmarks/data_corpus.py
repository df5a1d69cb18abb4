"""The corpus of the data benchmark (bench_data.py): English-like text generated on the fly,
the same bytes for the same size and seed, and nothing downloaded.

Words are 1 to 3 syllables (consonant(s), vowel(s), an optional final consonant) from a
vocabulary of 30,000 drawn once from the seed; a text draws them by Zipf's law (the word of
rank r with weight 1/r), one in ten of the 200 most frequent words capitalised, with commas,
full stops and a newline about every 14 words, and a blank line between paragraphs of about
1,000 words (5 kB: the size of a web page of OpenWebText).
The file is written in blocks of 8 MB, each block drawn from its own seed, so memory stays
small at any size; its last block is cut to size and ends in a newline. ASCII only: its
bytes are its characters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["hf_folder", "vocabulary", "write_corpus"]

BLOCK = 8_000_000  # bytes of text drawn at a time
WORDS = 30_000
ONSETS = [*"bcdfghjklmnprstvwyz", "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gr", "pl",
          "pr", "sh", "sl", "sp", "st", "str", "th", "tr", "wh"]  # fmt: skip
VOWELS = [*"aeiouaeioe", "ea", "ai", "ou", "oo", "ee", "ie"]
CODAS = ["", "", "", "n", "r", "s", "t", "l", "d", "m", "ng", "st", "nd", "ck", "th"]


def vocabulary(seed: int = 0) -> list[str]:
    """WORDS distinct words, the most frequent first (shorter words rank higher)."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < WORDS:
        n = int(rng.choice([1, 1, 2, 2, 2, 3]))
        w = (
            "".join(
                ONSETS[rng.integers(len(ONSETS))] + VOWELS[rng.integers(len(VOWELS))]
                for _ in range(n)
            )
            + CODAS[rng.integers(len(CODAS))]
        )
        words.setdefault(w)
    return sorted(words, key=len)  # stable: the draw order within a length


def _block(rng: np.random.Generator, table: np.ndarray, cum: np.ndarray, n_bytes: int) -> str:
    """About ``n_bytes`` of text: Zipf-drawn words with punctuation and newlines."""
    n_words = n_bytes // 4 + 16  # words average 5 to 6 bytes with their space and marks
    idx = np.searchsorted(cum, rng.random(n_words) * cum[-1])
    marks = rng.random(n_words)
    suffix = np.where(marks < 0.07, 1, np.where(marks < 0.13, 2, 0))  # "," "." or none
    suffix = np.where(rng.random(n_words) < 0.07, 3, suffix)  # "\n" after the word
    suffix[rng.random(n_words) < 0.001] = 4  # ".\n\n": a paragraph ends (~5 kB each)
    pieces = table[idx] + np.array(["", ",", ".", "\n", ".\n\n"])[suffix]
    text = " ".join(pieces.tolist())
    return text.replace("\n ", "\n")


def write_corpus(path: str | Path, n_bytes: int, seed: int = 0) -> Path:
    """Write exactly ``n_bytes`` bytes of ASCII text to ``path`` (see the module docstring)."""
    words = vocabulary(seed)
    weights = 1.0 / np.arange(1, len(words) + 1)
    capital = [w.capitalize() for w in words[:200]]
    table = np.array(words + capital, dtype=object)
    weights = np.concatenate([weights, weights[:200] / 9])  # one in ten of the 200 capitalised
    cum = np.cumsum(weights)
    path = Path(path)
    written = 0
    with open(path, "w", encoding="ascii", newline="") as f:
        block = 0
        while (left := n_bytes - written) > 0:
            text = _block(np.random.default_rng([seed, block]), table, cum, min(BLOCK, left))
            if len(text) >= left:  # the last block: cut to size, ending in a newline
                text = text[: left - 1] + "\n"
            f.write(text)
            written += len(text)
            block += 1
    return path


def hf_folder(corpus: str | Path, out: str | Path, vocab_size: int = 8192) -> Path:
    """A Hugging Face model folder in ``out`` for the tokenizer.json peers: a byte-level BPE
    ``tokenizer.json`` of ``vocab_size`` ids trained on ``corpus`` by the ``tokenizers``
    library (GPT-2's byte alphabet and pattern, ``<|endoftext|>`` as id 0 and as the
    beginning and end of a text), and a 1-layer GPT-2 (d_model 32, 2 heads, 64 positions)
    with random weights from seed 0, written by ``save_pretrained``."""
    import json

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train([str(corpus)], trainer)
    tok.save(str(out / "tokenizer.json"))
    roles = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
    (out / "tokenizer_config.json").write_text(json.dumps(roles), encoding="utf-8")
    eot = tok.token_to_id("<|endoftext|>")
    config = GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=64, bos_token_id=eot,
                        eos_token_id=eot, vocab_size=tok.get_vocab_size())  # fmt: skip
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(out)
    return out
