"""Tokenizers: char, word and byte-level BPE, with the five special tokens of the notes, and
any Hugging Face ``tokenizer.json``.

See ``base`` for the fixed special-token ids (0 <PAD>, 1 <BOS>, 2 <EOS>, 3 <UNK>, 4 <MASK>)
and the JSON file format; ``char``, ``word`` and ``bpe`` for the three vocabularies glassformer
trains; ``hf`` for a Hugging Face file (BPE, WordPiece, Unigram, WordLevel) and ``hf_dir``
for the tokenizer of a Hugging Face model directory (``load_hf_tokenizer``).
"""

from .base import (
    BOS_ID,
    EOS_ID,
    MASK_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    Tokenizer,
    get_tokenizer,
    load_tokenizer,
)
from .bpe import PATTERNS, BPETokenizer
from .char import CharTokenizer
from .hf import HFTokenizer
from .hf_dir import hf_roles, load_hf_tokenizer
from .word import WordTokenizer

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "MASK_ID",
    "PAD_ID",
    "PATTERNS",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "BPETokenizer",
    "CharTokenizer",
    "HFTokenizer",
    "Tokenizer",
    "WordTokenizer",
    "get_tokenizer",
    "hf_roles",
    "load_hf_tokenizer",
    "load_tokenizer",
]
