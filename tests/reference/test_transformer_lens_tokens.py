"""The model's to_tokens / to_str_tokens / to_single_token against TransformerLens 4 on the same
tokenizer: a tiny GPT-2 whose byte-level BPE names <|endoftext|> its BOS (TransformerLens
prepends it), a tiny Llama whose tokenizer prepends <s> itself, and a GPT-2 whose tokenizer
has no BOS at all. Each folder is built offline (transformers from a config, tokenizers trained on
a few sentences); glassformer reads it with from_huggingface_dir, TransformerLens with
TransformerBridge.boot_transformers."""

from __future__ import annotations

import re

import pytest
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformer_lens.model_bridge import TransformerBridge
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
)

from glassformer.interop.huggingface import from_huggingface_dir

SENTENCES = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "When Mary and John went to the store, John gave a drink to Mary",
] * 4
TEXTS = [
    "To be, or not",
    ["To be", "Whether 'tis nobler"],
    ["When Mary and John went to the store", " John gave a drink to"],
    "x<|endoftext|>y",
    "",
]


pytestmark = pytest.mark.usefixtures("offline")  # tests/reference/conftest.py


def _bpe(specials: list[str]) -> Tokenizer:
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    t.train_from_iterator(
        SENTENCES,
        trainers.BpeTrainer(vocab_size=320, special_tokens=specials, initial_alphabet=alphabet),
    )
    return t


def _gpt2(folder, named_bos: bool):
    t = _bpe(["<|endoftext|>"])
    eot = t.token_to_id("<|endoftext|>")
    roles = {"bos_token": "<|endoftext|>"} if named_bos else {}
    PreTrainedTokenizerFast(tokenizer_object=t, eos_token="<|endoftext|>", **roles).save_pretrained(
        folder
    )
    config = GPT2Config(
        vocab_size=t.get_vocab_size(), n_positions=64, n_embd=32, n_layer=1, n_head=2
    )
    config.bos_token_id = config.eos_token_id = eot
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    return GPT2LMHeadModel


def _llama(folder, named_bos: bool):
    t = _bpe(["<s>", "</s>"])
    bos = t.token_to_id("<s>")
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    PreTrainedTokenizerFast(tokenizer_object=t, bos_token="<s>", eos_token="</s>").save_pretrained(
        folder
    )
    config = LlamaConfig(
        vocab_size=t.get_vocab_size(),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        bos_token_id=bos,
        eos_token_id=t.token_to_id("</s>"),
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return LlamaForCausalLM


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def pair(request, tmp_path_factory):
    """(glassformer model, TransformerLens bridge) of one folder."""
    transformers.logging.set_verbosity_error()
    folder = tmp_path_factory.mktemp(request.param)
    cls = {"gpt2": _gpt2, "llama": _llama}[request.param](folder, named_bos=True)
    hf = cls.from_pretrained(folder, local_files_only=True).eval()
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf, device="cpu")
    return from_huggingface_dir(folder), bridge


@pytest.mark.parametrize("text", TEXTS, ids=repr)
@pytest.mark.parametrize("prepend_bos", [None, True, False])
def test_to_tokens_equals_transformer_lens(pair, text, prepend_bos):
    model, tl = pair
    assert model.default_prepend_bos
    for side in ("right", "left"):
        want = tl.to_tokens(text, prepend_bos=prepend_bos, padding_side=side)
        got = model.to_tokens(text, prepend_bos=prepend_bos, padding_side=side)
        assert got.tolist() == want.tolist(), side


@pytest.mark.parametrize("text", [t for t in TEXTS if isinstance(t, str) and t], ids=repr)
@pytest.mark.parametrize("prepend_bos", [None, False])
def test_to_str_tokens_equals_transformer_lens(pair, text, prepend_bos):
    model, tl = pair
    want = tl.to_str_tokens(text, prepend_bos=prepend_bos)
    assert model.to_str_tokens(text, prepend_bos=prepend_bos) == want
    ids = tl.to_tokens(text, prepend_bos=prepend_bos)
    assert model.to_str_tokens(ids) == tl.to_str_tokens(ids) == want
    assert model.to_str_tokens(ids[0].tolist()) == want


def test_to_single_token_equals_transformer_lens(pair):
    model, tl = pair
    for word in (" be", " Mary", " John", "To"):
        assert model.to_single_token(word) == tl.to_single_token(word)
    with pytest.raises(AssertionError):
        tl.to_single_token(" to be")
    pieces = re.escape(repr(tl.to_str_tokens(" to be", prepend_bos=False)))
    with pytest.raises(ValueError, match=rf"' to be' is 2 tokens \({pieces}\)"):
        model.to_single_token(" to be")


def test_a_tokenizer_without_a_bos_gets_none(tmp_path):
    """A byte-level BPE whose only special token is <pad>: glassformer prepends nothing by
    default (its <BOS> role is an id past the file's vocabulary); TransformerLens adds
    "<|endoftext|>" to the tokenizer and prepends that new id, which has no embedding."""
    transformers.logging.set_verbosity_error()
    t = _bpe(["<pad>"])
    PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>").save_pretrained(tmp_path)
    n = t.get_vocab_size()
    config = GPT2Config(vocab_size=n, n_positions=64, n_embd=32, n_layer=1, n_head=2)
    GPT2LMHeadModel(config).save_pretrained(tmp_path)
    model = from_huggingface_dir(tmp_path)
    hf = GPT2LMHeadModel.from_pretrained(tmp_path, local_files_only=True).eval()
    tl = TransformerBridge.boot_transformers(str(tmp_path), hf_model=hf, device="cpu")
    text = "To be, or not"
    assert not model.default_prepend_bos
    assert model.tokenizer.bos_id >= n
    want = tl.to_tokens(text, prepend_bos=False)
    assert model.to_tokens(text).tolist() == want.tolist() == [model.tokenizer.encode(text)]
    theirs = tl.to_tokens(text)
    assert theirs[0, 0] >= n and theirs[0, 1:].tolist() == want[0].tolist()
