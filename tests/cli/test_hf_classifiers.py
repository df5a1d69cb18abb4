"""``--checkpoint`` / ``--init-from`` a Hugging Face ``*ForSequenceClassification`` folder:
its classes are config.json's ``id2label``, by index. ``predict`` names them, ``eval`` maps
the file's labels through them (never by sorted name), a label the model lacks is refused,
and a run started from such a folder keeps the head and its classes when the data's labels
are the model's. The folders are built offline (transformers from a small random config),
with ``id2label`` in an order that sorting would not give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2ForSequenceClassification,
    PreTrainedTokenizerFast,
)

from glassformer.interop.huggingface import from_huggingface_dir, to_huggingface

from .test_hf_dirs import SENTENCES, byte_bpe, wordpiece

ID2LABEL = {0: "POSITIVE", 1: "NEGATIVE"}  # sorted by name, NEGATIVE would be class 0
LABEL2ID = {v: k for k, v in ID2LABEL.items()}
TEXTS = ["to be or not to be", "the slings and arrows", "a sea of troubles", "the question"]


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hf-bert-classifier")
    tok = wordpiece()
    PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(path)
    config = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=tok.token_to_id("[PAD]"),
        id2label=ID2LABEL,
        label2id=LABEL2ID,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hf-gpt2-classifier")
    tok = byte_bpe()
    eot = tok.token_to_id("<|endoftext|>")
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    ).save_pretrained(path)
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        id2label=ID2LABEL,
        label2id=LABEL2ID,
    )
    torch.manual_seed(1)
    GPT2ForSequenceClassification(config).save_pretrained(path)
    return path


def hf_probabilities(folder: Path, texts: list[str]) -> torch.Tensor:
    """(N, 2) softmax of the Hugging Face classifier's logits on the ids glassformer reads:
    <BOS> text <EOS> ([CLS] text [SEP] for BERT, <|endoftext|> text <|endoftext|> for GPT-2)."""
    ref = Tokenizer.from_file(str(folder / "tokenizer.json"))
    bert = (folder / "config.json").read_text().count("BertForSequenceClassification")
    cls = BertForSequenceClassification if bert else GPT2ForSequenceClassification
    bos, eos = ("[CLS]", "[SEP]") if bert else ("<|endoftext|>", "<|endoftext|>")
    # GPT-2: the last token, as glassformer pools its last real token (pad_token_id is
    # <|endoftext|>, which Hugging Face would skip at the end of a text)
    hf = cls.from_pretrained(folder, **({} if bert else {"pad_token_id": None})).eval()
    rows = [
        [ref.token_to_id(bos), *ref.encode(t, add_special_tokens=False).ids, ref.token_to_id(eos)]
        for t in texts
    ]
    with torch.no_grad():
        return torch.cat([hf(torch.tensor([ids])).logits.softmax(-1) for ids in rows])


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_predict_names_the_classes_of_id2label(cli, bert_dir, gpt2_dir, kind):
    """Each label is id2label's name of its class index, with Hugging Face's probability."""
    folder = bert_dir if kind == "bert" else gpt2_dir
    probabilities = hf_probabilities(folder, TEXTS)
    result = cli.run("predict", "--checkpoint", folder, "--text", *TEXTS, "--json", "--top-k", "2")
    assert result.code == 0, result.err
    for row, want in zip(result.out.splitlines(), probabilities.tolist(), strict=True):
        got = {t["label"]: t["probability"] for t in json.loads(row)["top"]}
        assert set(got) == {"POSITIVE", "NEGATIVE"}
        torch.testing.assert_close(
            [got["POSITIVE"], got["NEGATIVE"]], want, atol=1e-5, rtol=0
        )


def test_eval_maps_the_files_labels_through_id2label(cli, bert_dir, tmp_path):
    """Three rows labelled with the class Hugging Face predicts and one with the other: the
    accuracy is 0.75 and the loss Hugging Face's cross-entropy (a mapping by sorted name
    gives 0.25)."""
    probabilities = hf_probabilities(bert_dir, TEXTS)
    predicted = probabilities.argmax(-1).tolist()
    targets = [*predicted[:3], 1 - predicted[3]]
    rows = [f"{ID2LABEL[k]},{t}" for k, t in zip(targets, TEXTS, strict=True)]
    data = tmp_path / "labelled.csv"
    data.write_text("label,text\n" + "\n".join(rows) + "\n")
    result = cli.run(
        "eval", "--checkpoint", bert_dir, "--data", data, "--json", tmp_path / "eval.json"
    )
    assert result.code == 0, result.err
    metrics = json.loads((tmp_path / "eval.json").read_text())["metrics"]
    assert metrics["accuracy"] == 0.75
    loss = -probabilities[range(4), targets].log().mean()
    assert metrics["loss"] == pytest.approx(loss.item(), abs=1e-5)


def test_eval_refuses_a_label_the_model_lacks(cli, bert_dir, tmp_path):
    data = tmp_path / "three.csv"
    data.write_text("label,text\nPOSITIVE,to be\nNEGATIVE,or not\nNEUTRAL,to be\n")
    result = cli.run("eval", "--checkpoint", bert_dir, "--data", data)
    cli.assert_user_error(result, "three.csv", "['NEUTRAL']", "['POSITIVE', 'NEGATIVE']")


def test_a_run_from_a_classifier_keeps_its_head_and_classes(cli, bert_dir, tmp_path):
    """The data's labels are the model's: the classifier is loaded, not made anew, and the
    run's class indices are id2label's; a run that changes nothing (lr 0 is refused, so a
    learning rate too small to move a weight) predicts as Hugging Face does."""
    data = tmp_path / "train.csv"
    rows = [f'{"NEGATIVE" if i % 2 else "POSITIVE"},"{s}"' for i, s in enumerate(SENTENCES)]
    data.write_text("label,text\n" + "\n".join(rows) + "\n")
    out = tmp_path / "run"
    result = cli.run(
        "train", "--task", "classify", "--init-from", bert_dir, "--data", data, "--steps", "1",
        "--set", "train.lr=1e-30", "--set", "train.batch_size=4", "--set", "model.dropout=0",
        "--out", out,
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "new: nothing" in result.out
    config = json.loads((out / "run.json").read_text())["model"]
    assert config["extra"]["labels"] == ["POSITIVE", "NEGATIVE"]
    predicted = cli.run("predict", "--checkpoint", out, "--text", *TEXTS, "--json", "--top-k", "2")
    assert predicted.code == 0, predicted.err
    want = hf_probabilities(bert_dir, TEXTS)
    for row, probs in zip(predicted.out.splitlines(), want.tolist(), strict=True):
        got = {t["label"]: t["probability"] for t in json.loads(row)["top"]}
        torch.testing.assert_close([got["POSITIVE"], got["NEGATIVE"]], probs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_the_classes_convert_back_to_id2label(bert_dir, gpt2_dir, kind):
    model = from_huggingface_dir(bert_dir if kind == "bert" else gpt2_dir)
    assert model.class_names() == ["POSITIVE", "NEGATIVE"]
    hf = to_huggingface(model)
    assert hf.config.id2label == ID2LABEL and hf.config.label2id == LABEL2ID
    ids = torch.tensor([[5, 9, 12, 7]])
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, model(ids).logits)
