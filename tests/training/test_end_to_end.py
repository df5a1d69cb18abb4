"""Each family learns a small task in a few hundred steps: a broken gradient path fails here.

Thresholds are far from chance (stated per test) and reached with a wide margin on the
seeds used; the runs are deterministic (fixed seeds, one thread).
"""

import math

import pytest
import torch

from glassformer import DecoderLM, EncoderClassifier, EncoderDecoder, EncoderMLM, preset
from glassformer.data import TextDataset, load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer

SMALL = dict(d_model=32, n_head=4, n_layer=2)
TEXT = "the cat sat on the mat. the dog sat on the log. " * 40


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def fit(model, tok, train, val, task, steps):
    torch.manual_seed(0)
    cfg = TrainConfig(
        task=task, steps=steps, batch_size=32, lr=3e-3, warmup=20, eval_every=0,
        eval_batches=4, save_every=0, eval_generate=64,
    )  # fmt: skip
    return Trainer(model, tok, train, val, cfg, None, progress=False).fit()


def text_data():
    train = TextDataset("toy", "lm", "train", [TEXT])
    val = TextDataset("toy", "lm", "validation", [TEXT[:400]])
    return train, val, CharTokenizer().train(TEXT)


def test_decoder_learns_a_repetitive_text():
    train, val, tok = text_data()
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", vocab_size=tok.vocab_size, max_len=32, **SMALL))
    metrics = fit(model, tok, train, val, "lm", 150)
    assert metrics["val_loss"] < 0.3  # chance: ln(17 characters) = 2.8 nats


def test_encoder_learns_masked_tokens():
    train, val, tok = text_data()
    torch.manual_seed(0)
    model = EncoderMLM(preset("tiny-encoder", vocab_size=tok.vocab_size, max_len=32, **SMALL))
    metrics = fit(model, tok, train, val, "mlm", 150)
    assert metrics["val_loss"] < 1.2  # chance: 2.8 nats


def test_classifier_learns_an_order_dependent_label():
    opts = dict(min_length=3, max_length=6, alphabet="abcde", seed=0)
    train = load_dataset("is_sorted", num_examples=2000, **opts)
    val = load_dataset("is_sorted", "validation", num_examples=200, **opts)
    tok = CharTokenizer().train(train.texts())
    torch.manual_seed(0)
    cfg = preset("tiny-encoder", vocab_size=tok.vocab_size, max_len=16, n_classes=2, **SMALL)
    metrics = fit(EncoderClassifier(cfg), tok, train, val, "classify", 300)
    assert metrics["val_accuracy"] > 0.9  # bag-of-words is at chance (0.5) on is_sorted


def test_encoder_decoder_learns_to_sort():
    opts = dict(min_length=1, max_length=5, alphabet="abcdef", seed=0)
    train = load_dataset("sort", num_examples=2000, **opts)
    val = load_dataset("sort", "validation", num_examples=200, **opts)
    tok = CharTokenizer().train(train.texts())
    torch.manual_seed(0)
    cfg = preset("tiny-seq2seq", vocab_size=tok.vocab_size, max_len=16, **SMALL)
    metrics = fit(EncoderDecoder(cfg), tok, train, val, "seq2seq", 300)
    assert metrics["val_loss"] < 0.2  # chance: ln(8) = 2.1 nats per target token
    assert metrics["val_exact_match"] > 0.9
    assert math.isfinite(metrics["val_token_accuracy"])
