"""glassformer.data: built-in corpora and tasks, user files, chunking, padding, masking.

The path of the notes ("Formal Algorithms for Transformers"): text / pairs / labelled text ->
tokenizer -> ids wrapped in <BOS>/<EOS> and chunked to l_max -> padded batch {input_ids,
attention_mask, labels}.

    >>> from glassformer.data import load_dataset, make_loader
    >>> from glassformer.tokenizers.char import CharTokenizer
    >>> train = load_dataset("reverse", num_examples=1000, seed=0)
    >>> tok = CharTokenizer().train(train.texts())
    >>> batch = next(iter(make_loader(train, tok, batch_size=8, max_len=16)))
    >>> sorted(batch)
    ['attention_mask', 'decoder_attention_mask', 'decoder_input_ids', 'input_ids', 'labels']

Modules: examples (TextDataset, the three example shapes), corpora (Shakespeare), synthetic
(reverse, sort, addition, is_sorted, induction), files (user .txt/.tsv/.csv), registry
(list_datasets, load_dataset), encoding (token datasets and chunking), token_cache (a text
file's tokens encoded once, read from a memory map), record_cache and record_dataset (the same
for seq2seq and classification records), collate (padding), masking (MLM), loader
(make_loader).
"""

from .collate import (
    IGNORE_INDEX,
    Collator,
    collate_classification,
    collate_lm,
    collate_seq2seq,
    pad_sequences,
    shift_right,
)
from .encoding import ClassificationDataset, LMDataset, Seq2SeqDataset
from .examples import SPLITS, TextDataset
from .loader import encode_dataset, make_collate, make_loader
from .masking import MLMCollator, mask_tokens
from .registry import DatasetInfo, list_datasets, load_dataset
from .user_files import read_file

__all__ = [
    "IGNORE_INDEX",
    "SPLITS",
    "ClassificationDataset",
    "Collator",
    "DatasetInfo",
    "LMDataset",
    "MLMCollator",
    "Seq2SeqDataset",
    "TextDataset",
    "collate_classification",
    "collate_lm",
    "collate_seq2seq",
    "encode_dataset",
    "list_datasets",
    "load_dataset",
    "make_collate",
    "make_loader",
    "mask_tokens",
    "pad_sequences",
    "read_file",
    "shift_right",
]
