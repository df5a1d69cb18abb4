"""The big presets have the size of the models they are named after: glassformer's
``num_parameters()`` equals Hugging Face's for a model built from the matching default config.

Both sides are built on the meta device (shapes only, no memory, no initialisation), so these
124M / 110M / 63M-parameter models cost milliseconds; counting needs nothing else.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from glassformer.models import DecoderLM, EncoderDecoder, EncoderMLM, EncoderModel  # noqa: E402
from glassformer.presets import preset  # noqa: E402

transformers.logging.set_verbosity_error()


def count(build) -> int:
    with torch.device("meta"):
        return build().num_parameters()


def test_gpt2_preset_is_gpt2_small():
    hf = count(lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config()))
    assert count(lambda: DecoderLM(preset("gpt2"))) == hf == 124_439_808


def test_bert_base_preset_is_bert_base():
    """EncoderModel with the pooler = BertModel (109.5M); EncoderMLM = BertForMaskedLM (the
    MLM transform and output bias instead of the pooler)."""
    hf = count(lambda: transformers.BertModel(transformers.BertConfig()))
    assert count(lambda: EncoderModel(preset("bert-base"))) == hf == 109_482_240
    hf_mlm = count(lambda: transformers.BertForMaskedLM(transformers.BertConfig()))
    assert count(lambda: EncoderMLM(preset("bert-base"))) == hf_mlm


def test_vaswani_base_preset_matches_a_marian_model_of_the_same_shape():
    """MarianMTModel is HF's closest class to Vaswani et al.'s base model: post-norm, sinusoidal
    positions, ReLU, √d_model-scaled embeddings shared by encoder, decoder and the (tied)
    unembedding, no embedding norm, no final norm. It is a fair reference for the count with
    two caveats: HF stores the sinusoid tables as frozen parameters (glassformer: a buffer), so
    HF's *trainable* count is used; and final_logits_bias is a buffer in HF (glassformer's
    preset has no head bias). Outputs are not compared: Marian lays the sinusoids out as
    [sin | cos] halves, glassformer interleaves them as the notes do."""
    config = transformers.MarianConfig(
        vocab_size=37000,
        d_model=512,
        encoder_layers=6,
        decoder_layers=6,
        encoder_attention_heads=8,
        decoder_attention_heads=8,
        encoder_ffn_dim=2048,
        decoder_ffn_dim=2048,
        activation_function="relu",
        max_position_embeddings=512,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=0,
        decoder_start_token_id=0,
    )
    with torch.device("meta"):
        hf = transformers.MarianMTModel(config).num_parameters(only_trainable=True)
    assert count(lambda: EncoderDecoder(preset("vaswani-base"))) == hf
