"""A GPT-2 folder as real ones ship: a byte-level BPE ``tokenizer.json`` with padding and
truncation set and no mask or unknown token, and a model whose vocabulary may be padded past
the tokenizer's ids (rows no id uses). ``train --init-from`` takes it for ``lm`` (the <MASK>
role the tokenizer adds past its file is one a decoder never uses); no command ever chooses,
lists or names an id the tokenizer does not define; a folder whose config.json or
tokenizer.json does not fit the task is refused before its weights are read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from starlette.testclient import TestClient
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from glassformer import load_model
from glassformer.explore.server import HEADER, create_app
from glassformer.generation import generate
from glassformer.interop.huggingface import from_huggingface_dir

SENTENCES = [
    "To be, or not to be, that is the question:",
    "Whether 'tis nobler in the mind to suffer",
    "The slings and arrows of outrageous fortune,",
    "Or to take arms against a sea of troubles",
] * 4
PADDED = 8  # rows past the tokenizer's ids


def shipped_tokenizer() -> Tokenizer:
    """Byte-level BPE with GPT-2's one special token, padding and truncation set."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    t.train_from_iterator(
        SENTENCES,
        trainers.BpeTrainer(
            vocab_size=320, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet
        ),
    )
    t.enable_padding(pad_id=0, pad_token="<|endoftext|>", length=128)
    t.enable_truncation(max_length=16)
    return t


def gpt2_folder(path: Path, padded: int) -> Path:
    """A GPT-2 folder with ``padded`` embedding rows past the tokenizer's ids. With padding,
    the final norm is set so that every position's logits favour the padding rows: a command
    that does not leave them out chooses one at once."""
    tok = shipped_tokenizer()
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    ).save_pretrained(path)
    n, eot = tok.get_vocab_size(), tok.token_to_id("<|endoftext|>")
    config = GPT2Config(vocab_size=n + padded, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=eot, eos_token_id=eot)  # fmt: skip
    torch.manual_seed(1)
    model = GPT2LMHeadModel(config)
    if padded:
        with torch.no_grad():
            b = torch.nn.functional.normalize(torch.randn(32), dim=0)
            model.transformer.ln_f.weight.zero_()
            model.transformer.ln_f.bias.copy_(b)  # every final stream is b
            model.transformer.wte.weight[n:] = 10 * b  # tied: the padding rows' logits are 10
    model.save_pretrained(path)
    (path / "text.txt").write_text("\n".join(SENTENCES) + "\n")
    return path


@pytest.fixture(scope="module")
def exact(tmp_path_factory) -> Path:
    return gpt2_folder(tmp_path_factory.mktemp("gpt2-exact"), 0)


@pytest.fixture(scope="module")
def padded(tmp_path_factory) -> Path:
    return gpt2_folder(tmp_path_factory.mktemp("gpt2-padded"), PADDED)


@pytest.fixture(scope="module")
def tuned(cli, padded, tmp_path_factory) -> Path:
    """The padded folder fine-tuned for two steps."""
    out = tmp_path_factory.mktemp("tuned") / "run"
    result = cli.run("train", "--data", padded / "text.txt", "--init-from", padded, "--out", out,
                     "--steps", "2", "--set", "train.batch_size=2", "--set",
                     "sample.max_new_tokens=8")  # fmt: skip
    assert result.code == 0, result.err
    return out


def test_init_from_a_decoder_whose_tokenizer_lacks_a_mask_token(cli, exact, tmp_path):
    """The tokenizer adds <UNK> and <MASK> past its 320 ids; the model has 320 rows; lm
    uses neither."""
    out = tmp_path / "run"
    result = cli.run("train", "--data", exact / "text.txt", "--init-from", exact, "--out", out,
                     "--steps", "1", "--set", "train.batch_size=2")  # fmt: skip
    assert result.code == 0, result.err
    assert f"init from {exact.resolve()}: 0.04M parameters from it; new: nothing" in result.out
    model = load_model(out)
    assert model.config.vocab_size == model.tokenizer.file_vocab_size == 320
    assert model.tokenizer.mask_id == 321
    assert model.to_tokens("to be").tolist() == [[0, 84, 79, 271]]
    with pytest.raises(ValueError) as err:
        model.to_tokens("to be <MASK>")
    assert str(err.value) == (
        "to_tokens: text 0 holds '<MASK>' (id 321), a token the model has no embedding for: "
        "allowed ids 0 .. 319; leave '<MASK>' out"
    )


def damaged_copy(folder: Path, tmp_path: Path, **config) -> Path:
    """A copy of ``folder`` with ``config`` in its config.json and weights no loader reads."""
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    meta = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**meta, **config}))
    (copy / "model.safetensors").write_bytes(b"not weights")
    return copy


@pytest.mark.parametrize(
    ("config", "task", "words"),
    [
        ({"vocab_size": 300}, "lm", "its tokenizer defines 320 ids but the model's vocabulary "
         "is 300; ids 300 .. 319 have no embedding"),
        ({}, "mlm", "a decoder model (DecoderLM); --task mlm needs encoder"),
    ],
)  # fmt: skip
def test_what_config_and_tokenizer_decide_is_refused_before_the_weights(
    cli, exact, tmp_path, config, task, words
):
    folder = damaged_copy(exact, tmp_path, **config)
    out = tmp_path / "run"
    result = cli.run("train", "--data", folder / "text.txt", "--task", task, "--init-from",
                     folder, "--out", out)  # fmt: skip
    cli.assert_user_error(result, f"--init-from {folder}", words)
    assert not out.exists()


def test_mlm_needs_a_mask_token_the_model_embeds(cli, tmp_path):
    """An encoder whose tokenizer has no mask token: its <MASK> is past the model's rows."""
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    t.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(special_tokens=specials))
    folder = tmp_path / "bert"
    PreTrainedTokenizerFast(
        tokenizer_object=t, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]",
    ).save_pretrained(folder)  # fmt: skip
    n = t.get_vocab_size()
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"],
                                                    "model_type": "bert", "vocab_size": n}))
    (folder / "model.safetensors").write_bytes(b"not weights")
    (tmp_path / "t.txt").write_text("\n".join(SENTENCES))
    result = cli.run("train", "--data", tmp_path / "t.txt", "--task", "mlm", "--init-from",
                     folder, "--out", tmp_path / "run")  # fmt: skip
    cli.assert_user_error(
        result,
        f"--task mlm uses the role <MASK>, which its tokenizer lacks (added as id {n}, past "
        f"the model's vocabulary of {n}): give the folder a tokenizer that names a <MASK> token",
    )


def test_generation_never_chooses_a_padding_row(padded):
    """The padding rows' logits are the largest at every position; greedy decoding, sampling
    and beam search choose among the tokenizer's 320 ids only."""
    model = from_huggingface_dir(padded)
    assert model.config.vocab_size == 328 and model.tokenizer.file_vocab_size == 320
    ids = model.to_tokens("to be")[0].tolist()
    with torch.no_grad():
        assert int(model(torch.tensor([ids])).logits[0, -1].argmax()) >= 320
    for settings in ({"temperature": 0.0}, {"temperature": 5.0, "seed": 3}, {"num_beams": 3}):
        out = generate(model, [ids], max_new_tokens=12, tokenizer=model.tokenizer, **settings)
        assert len(out.tokens[0]) == 12 and max(out.tokens[0]) < 320, settings


def test_commands_on_a_fine_tuned_padded_decoder(cli, padded, tuned, tmp_path):
    """generate, eval, trace, inspect and the explorer's data answer; each list of likely
    tokens names defined ids only."""
    result = cli.run("generate", "--checkpoint", tuned, "--prompt", "to be", "--max-new-tokens",
                     "20", "--temperature", "0")  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.startswith("to be") and "<MASK>" not in result.out
    evaluated = cli.run("eval", "--checkpoint", tuned, "--data", padded / "text.txt", "--json",
                        tmp_path / "eval.json")  # fmt: skip
    assert evaluated.code == 0, evaluated.err
    assert json.loads((tmp_path / "eval.json").read_text())["metrics"]["loss"] > 0
    traced = cli.run("trace", "--checkpoint", tuned, "--text", "to be")
    assert traced.code == 0, traced.err
    assert "next token after the input: p = softmax(logits[0, -1]) = " in traced.out
    inspected = cli.run("inspect", "--checkpoint", tuned, "--text", "to be", "--out",
                        tmp_path / "pictures", "--circuits")  # fmt: skip
    assert inspected.code == 0, inspected.err
    model = load_model(tuned)
    app = create_app(model, name="tuned", text="to be")
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        got = client.post("/api/run", json={"text": "to be or"}, headers={HEADER: "1"})
    assert got.status_code == 200, got.text
    data = got.json()
    top = data["predictions"]["top"]
    assert len(top) == len(model.to_tokens("to be or")[0])
    assert all(0 <= i < 320 for row in top for _, i, _ in row)
    assert all(len(row) == 5 for row in top)
    assert all("<MASK>" not in t for layer in data["lens"]["tokens"] for at in layer for t in at)
