"""``--checkpoint`` a Hugging Face model directory whose tokenizer is a ``tokenizer.json`` of
any kind: a tiny BERT with a WordPiece tokenizer and a tiny GPT-2 with a byte-level BPE one,
built offline (transformers from a config, tokenizers trained on a few sentences), answer as
Hugging Face does on the same ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
)

from glassformer import load_model
from glassformer.interop.huggingface import from_huggingface_dir
from glassformer.tokenizers import HFTokenizer, load_hf_tokenizer

SENTENCES = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles",
] * 4


def wordpiece() -> Tokenizer:
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    t.train_from_iterator(
        SENTENCES, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials)
    )
    return t


def byte_bpe() -> Tokenizer:
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    t.train_from_iterator(
        SENTENCES,
        trainers.BpeTrainer(
            vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet
        ),
    )
    return t


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hf-bert")
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
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(path)
    (path / "text.txt").write_text("\n".join(SENTENCES) + "\n")
    return path


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hf-gpt2")
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
    )
    torch.manual_seed(1)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def test_predict_fills_the_mask_as_hugging_face(cli, bert_dir):
    """BERT's [MASK] or glassformer's <MASK> in the text; the candidates and probabilities
    are the softmax of BertForMaskedLM's logits at that position, specials left out."""
    ref = Tokenizer.from_file(str(bert_dir / "tokenizer.json"))
    hf = BertForMaskedLM.from_pretrained(bert_dir).eval()
    text = "to be or [MASK] to be, naïve 😀"
    ids = [ref.token_to_id("[CLS]"), *ref.encode(text, add_special_tokens=False).ids]
    ids.append(ref.token_to_id("[SEP]"))
    pos = ids.index(ref.token_to_id("[MASK]"))
    with torch.no_grad():
        logits = hf(torch.tensor([ids])).logits[0, pos]
    logits[[ref.token_to_id(s) for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]] = -1e9
    p, top = logits.softmax(-1).topk(3)
    for written in (text, text.replace("[MASK]", "<MASK>")):
        result = cli.run("predict", "--checkpoint", bert_dir, "--text", written, "--top-k", "3",
                         "--json")  # fmt: skip
        assert result.code == 0, result.err
        (mask,) = json.loads(result.out)["masks"]
        assert mask["position"] == pos
        assert [c["token_id"] for c in mask["candidates"]] == top.tolist()
        got = [c["probability"] for c in mask["candidates"]]
        torch.testing.assert_close(torch.tensor(got), p, atol=1e-5, rtol=1e-4)


def test_eval_of_the_directory_equals_eval_of_its_glassformer_checkpoint(cli, bert_dir, tmp_path):
    """The converted model saved as a glassformer checkpoint keeps its WordPiece tokenizer
    (kind "hf" in tokenizer.json): same ids, same metrics."""
    model = from_huggingface_dir(bert_dir)
    model.tokenizer = load_hf_tokenizer(bert_dir)
    model.save_pretrained(tmp_path / "glass")
    saved = json.loads((tmp_path / "glass" / "tokenizer.json").read_text())
    assert saved["kind"] == "hf" and saved["huggingface"]["model"]["type"] == "WordPiece"
    back = load_model(tmp_path / "glass").tokenizer
    assert isinstance(back, HFTokenizer)
    assert back.encode(SENTENCES[0]) == model.tokenizer.encode(SENTENCES[0])
    reports = []
    for ckpt, out in ((bert_dir, tmp_path / "a.json"), (tmp_path / "glass", tmp_path / "b.json")):
        result = cli.run("eval", "--checkpoint", ckpt, "--data", bert_dir / "text.txt",
                         "--batches", "2", "--batch-size", "2", "--json", out)  # fmt: skip
        assert result.code == 0, result.err
        reports.append(json.loads(out.read_text()))
    assert reports[0]["task"] == "mlm"
    assert reports[0]["metrics"] == pytest.approx(reports[1]["metrics"], rel=1e-6)
    assert 0 < reports[0]["metrics"]["loss"] < 20


def test_a_gpt2_directory_saved_as_a_checkpoint_loads_again(cli, gpt2_dir, tmp_path):
    """GPT-2's file has no <MASK> and no <UNK>: those roles get ids past the file's, which
    no text encodes to, so the checkpoint's vocabulary check counts the file's ids only."""
    model = from_huggingface_dir(gpt2_dir)
    model.tokenizer = load_hf_tokenizer(gpt2_dir)
    assert model.tokenizer.file_vocab_size <= model.config.vocab_size < model.tokenizer.vocab_size
    model.save_pretrained(tmp_path / "glass")
    back = load_model(tmp_path / "glass")
    assert back.tokenizer.encode("To be") == model.tokenizer.encode("To be")
    result = cli.run("generate", "--checkpoint", tmp_path / "glass", "--prompt", "To be",
                     "--max-new-tokens", "3", "--temperature", "0")  # fmt: skip
    assert result.code == 0, result.err


def test_generate_greedy_equals_hugging_face(cli, gpt2_dir):
    """The prompt after <BOS>, here GPT-2's <|endoftext|> (tokenizer_config.json's
    bos_token), then greedy steps as GPT2LMHeadModel.generate takes them."""
    ref = Tokenizer.from_file(str(gpt2_dir / "tokenizer.json"))
    hf = GPT2LMHeadModel.from_pretrained(gpt2_dir).eval()
    prompt = "To be, or not"
    eot = ref.token_to_id("<|endoftext|>")
    ids = torch.tensor([[eot, *ref.encode(prompt, add_special_tokens=False).ids]])
    with torch.no_grad():
        out = hf.generate(
            ids, max_new_tokens=6, do_sample=False, attention_mask=torch.ones_like(ids)
        )
    expected = ref.decode(out[0, ids.shape[1] :].tolist())
    result = cli.run("generate", "--checkpoint", gpt2_dir, "--prompt", prompt, "--temperature",
                     "0", "--max-new-tokens", "6")  # fmt: skip
    assert result.code == 0, result.err
    assert result.out == prompt + expected + "\n"


def test_trace_shows_the_directorys_tokens(cli, bert_dir):
    result = cli.run("trace", "--checkpoint", bert_dir, "--text", "to be")
    assert result.code == 0, result.err
    assert "['[CLS]', 'to', 'be', '[SEP]']" in result.out


def test_refusals(cli, bert_dir, gpt2_dir, tmp_path):
    result = cli.run("generate", "--checkpoint", bert_dir, "--prompt", "to")
    cli.assert_user_error(result, "a Hugging Face BertForMaskedLM", "EncoderMLM", "generate takes")
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        (bare / name).write_bytes((gpt2_dir / name).read_bytes())
    cli.assert_user_error(
        cli.run("generate", "--checkpoint", bare, "--prompt", "to"), "without a tokenizer"
    )
    (bare / "tokenizer.json").write_text('{"model": {"type": "Magic"}}')
    cli.assert_user_error(
        cli.run("generate", "--checkpoint", bare, "--prompt", "to"), "model type is 'Magic'"
    )
    (bare / "tokenizer.json").write_text("[" * 5000 + "]" * 5000)
    cli.assert_user_error(cli.run("trace", "--checkpoint", bare, "--text", "to"), "tokenizer")


def test_eval_pads_a_gpt2_directory_with_its_eos(cli, gpt2_dir, tmp_path):
    """GPT-2 has no pad token: <PAD> is <|endoftext|>, an id the model has a row for, so the
    last, shorter window is padded and every window is scored."""
    assert load_hf_tokenizer(gpt2_dir).pad_id == Tokenizer.from_file(
        str(gpt2_dir / "tokenizer.json")
    ).token_to_id("<|endoftext|>")
    (tmp_path / "text.txt").write_text("\n".join(SENTENCES * 3) + "\n")
    out = tmp_path / "eval.json"
    result = cli.run("eval", "--checkpoint", gpt2_dir, "--data", tmp_path / "text.txt",
                     "--batch-size", "4", "--json", out)  # fmt: skip
    assert result.code == 0, result.err
    report = json.loads(out.read_text())
    assert report["task"] == "lm" and report["examples"] == report["examples_in_split"] > 1
    assert 0 < report["metrics"]["loss"] < 20


def test_explore_exports_the_page_of_a_directory(cli, bert_dir, tmp_path):
    page = tmp_path / "page.html"
    result = cli.run("explore", "--checkpoint", bert_dir, "--text", "to be", "--export", page)
    assert result.code == 0, result.err
    assert '"[CLS]"' in page.read_text() and '"[SEP]"' in page.read_text()


def test_without_the_tokenizers_package_the_command_names_the_extra(cli, gpt2_dir, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tokenizers", None)
    result = cli.run("generate", "--checkpoint", gpt2_dir, "--prompt", "to")
    cli.assert_user_error(result, "'tokenizers'", "glassformer[hf]")


def test_a_tokenizer_regex_past_the_engines_retry_limit_is_one_error_line(cli, gpt2_dir, tmp_path):
    """The tokenizers library panics (``PanicException``, a BaseException) when a regex runs
    past the regex engine's retry limit: exit 2 and glassformer's one line, which comes last
    (the library prints its panic message on stderr itself)."""
    folder = tmp_path / "gpt2"
    shutil.copytree(gpt2_dir, folder)
    data = json.loads((folder / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": r"(\w+\s?)+$"},
                             "behavior": "Isolated", "invert": False}  # fmt: skip
    (folder / "tokenizer.json").write_text(json.dumps(data))
    result = cli.run("generate", "--checkpoint", folder, "--prompt", "a" * 30 + "!")
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.splitlines()[-1] == (
        "glassformer: error: the BPE tokenizer cannot encode the text "
        "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' (Onig: Regex search error: retry-limit-in-match "
        "over): allowed a tokenizer.json that the tokenizers library can apply"
    )
