"""DecoderClassifier: a causal decoder pooled at its last real token (``pooling="last"``), as
Hugging Face's ``*ForSequenceClassification`` decoders are; saved and loaded as any model."""

from __future__ import annotations

import torch

from glassformer import load_model
from glassformer.models import ARCHITECTURES, DecoderClassifier, DecoderLM
from glassformer.models.config import ModelConfig
from glassformer.models.heads import pool
from glassformer.tasks import task_for_model

CONFIG = ModelConfig(
    family="decoder", vocab_size=20, max_len=12, d_model=16, n_layer=2, n_head=2,
    n_classes=3, pooling="last",
)  # fmt: skip


def test_last_pooling_takes_the_last_real_token_with_either_padding():
    h = torch.arange(2 * 4 * 1, dtype=torch.float).reshape(2, 4, 1)  # value = b * 4 + t
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    left = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]], dtype=torch.bool)
    assert pool(h, right, "last").flatten().tolist() == [1.0, 7.0]
    assert pool(h, left, "last").flatten().tolist() == [3.0, 7.0]
    assert pool(h, None, "last").flatten().tolist() == [3.0, 7.0]


def test_the_classifier_is_the_decoder_read_at_its_last_real_token():
    torch.manual_seed(0)
    model = DecoderClassifier(CONFIG).eval()
    lm = DecoderLM(CONFIG).eval()
    lm.load_state_dict(model.state_dict(), strict=False)  # the same body
    ids = torch.tensor([[1, 5, 6, 7]])
    with torch.no_grad():
        h = lm(ids).hidden_states[:, -1]  # (1, C)
        want = model.classifier(h)
        torch.testing.assert_close(model(ids).logits, want)
        right = torch.tensor([[1, 5, 6, 7, 0, 0]])
        left = torch.tensor([[0, 0, 1, 5, 6, 7]])
        torch.testing.assert_close(model(right, (right != 0).long()).logits, want)
        torch.testing.assert_close(model(left, (left != 0).long()).logits, want)
        loss = model(ids, labels=torch.tensor([2])).loss
        torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(want, torch.tensor([2])))


def test_it_saves_loads_and_belongs_to_classify(tmp_path):
    torch.manual_seed(0)
    model = DecoderClassifier(CONFIG).eval()
    model.save_pretrained(tmp_path)
    again = load_model(tmp_path).eval()
    assert type(again) is DecoderClassifier
    assert ARCHITECTURES["DecoderClassifier"] is DecoderClassifier
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(again(ids).logits, model(ids).logits)
    assert task_for_model("DecoderClassifier").name == "classify"
