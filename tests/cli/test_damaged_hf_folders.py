"""Damaged or mismatched Hugging Face folders (GPT-2, BERT, Llama, BART built from small random
configs by ``save_pretrained``, then broken one way each): ``from_huggingface_dir`` refuses each
in one ValueError naming the file, the field or tensor, its value and what is allowed, before
building anything where config.json decides; every command that reads the folder answers in
one line, exit 2; weights are never started from random values without saying so
(interop/huggingface/folder_checks.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import transformers  # a test requirement: a missing one fails, never skips
from safetensors.torch import load_file, save_file

from glassformer.interop.huggingface import from_huggingface_dir
from glassformer.interop.huggingface.folder_checks import WeightsNote
from glassformer.tokenizers import BPETokenizer

transformers.logging.set_verbosity_error()

TEXT = "the cat sat on the mat. a dog ran in the park.\n" * 20
ROWS = "label,text\n" + "".join(f"{'pos' if i % 2 else 'neg'},the cat {i}\n" for i in range(20))
# family: (class, width, heads, activation, layers) as its config.json names them
FIELDS = {
    "gpt2": ("GPT2LMHeadModel", "n_embd", "n_head", "activation_function", "n_layer"),
    "bert": ("BertForMaskedLM", "hidden_size", "num_attention_heads", "hidden_act",
             "num_hidden_layers"),
    "llama": ("LlamaForCausalLM", "hidden_size", "num_attention_heads", "hidden_act",
              "num_hidden_layers"),
    "bart": ("BartForConditionalGeneration", "d_model", "encoder_attention_heads",
             "activation_function", "encoder_layers"),
}  # fmt: skip
ACTS = "'gelu', 'gelu_new', 'gelu_pytorch_tanh', 'relu'"


def hf_model(family: str, vocab: int):
    torch.manual_seed(0)
    t = transformers
    if family == "gpt2":
        return t.GPT2LMHeadModel(t.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=vocab,
                                              n_positions=32))  # fmt: skip
    if family == "bert":
        return t.BertForMaskedLM(t.BertConfig(
            num_hidden_layers=2, hidden_size=16, num_attention_heads=2, intermediate_size=32,
            vocab_size=vocab, max_position_embeddings=32, pad_token_id=0))  # fmt: skip
    if family == "llama":
        return t.LlamaForCausalLM(t.LlamaConfig(
            num_hidden_layers=2, hidden_size=16, num_attention_heads=2, num_key_value_heads=1,
            intermediate_size=32, vocab_size=vocab, max_position_embeddings=32))  # fmt: skip
    return t.BartForConditionalGeneration(t.BartConfig(
        encoder_layers=2, decoder_layers=1, d_model=16, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, vocab_size=vocab,
        max_position_embeddings=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=None))  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """Each family's folder as save_pretrained writes it, with GPT-2 tokenizer files, and the
    data files of the command-line tests."""
    root = tmp_path_factory.mktemp("hf")
    tokenizer = BPETokenizer().train([TEXT, ROWS], vocab_size=280)
    out = {"text": root / "text.txt", "rows": root / "rows.csv"}
    out["text"].write_text(TEXT)
    out["rows"].write_text(ROWS)
    for family in FIELDS:
        out[family] = root / family
        hf_model(family, tokenizer.vocab_size).save_pretrained(out[family])
        tokenizer.save_gpt2_files(out[family])
    return out


def copy(folders, tmp_path: Path, family: str, **config) -> Path:
    """A copy of the family's folder, config.json's fields ``config`` changed."""
    path = tmp_path / family
    shutil.copytree(folders[family], path)
    meta = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**meta, **config}))
    return path


def edit_weights(path: Path, change) -> None:
    tensors = load_file(path / "model.safetensors")
    change(tensors)
    save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})


def config_value(path: Path, field: str):
    return json.loads((path / "config.json").read_text())[field]


@pytest.mark.parametrize("family", FIELDS)
@pytest.mark.parametrize("damage", ["heads 0", "string size", "activation", "heads split"])
def test_config_json_is_checked_before_anything_is_built(
    folders, tmp_path, monkeypatch, family, damage
):
    cls, width, heads, act, _ = FIELDS[family]
    change, message = {
        "heads 0": ({heads: 0}, f"{heads}=0 is not a size; allowed: a whole number >= 1"),
        "string size": ({width: "16"}, f"{width}='16' is not a size; allowed: a whole number >= 1"),
        "activation": (
            {act: "swishy"},
            f"{act}='swishy' is not an activation glassformer reads; allowed: "
            + ("'silu'" if family == "llama" else ACTS),
        ),
        "heads split": (
            {heads: 3},
            f"{heads}=3 does not divide {width}=16; allowed: a divisor of {width}",
        ),
    }[damage]
    path = copy(folders, tmp_path, family, **change)
    built = []
    monkeypatch.setattr(getattr(transformers, cls), "__init__", lambda *a, **k: built.append(1))
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    assert str(err.value) == f"{path / 'config.json'}: {message}"
    assert not built  # refused before transformers built a model


@pytest.mark.parametrize("family", FIELDS)
@pytest.mark.parametrize("cut", [0, 0.5])
def test_an_empty_or_truncated_safetensors_file_is_named(folders, tmp_path, family, cut):
    path = copy(folders, tmp_path, family)
    weights = path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: int(len(data) * cut)])
    reason = "header too small" if cut == 0 else "incomplete metadata, file not fully covered"
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    assert str(err.value) == (
        f"{weights}: not a readable safetensors file (Error while deserializing header: "
        f"{reason}); it is damaged or cut short (an interrupted download or copy?): fetch or "
        "save it again"
    )


# family: (the first tensor a larger vocabulary changes, how many more)
EMBEDDING = {
    "gpt2": ("transformer.wte.weight", 0),
    "bert": ("bert.embeddings.word_embeddings.weight", 1),  # and cls.predictions.bias
    "llama": ("lm_head.weight", 1),  # untied: and model.embed_tokens.weight
    "bart": ("final_logits_bias", 1),  # and model.shared.weight
}


@pytest.mark.parametrize("family", FIELDS)
def test_a_tensor_shaped_otherwise_than_config_json_says_is_named_with_both_shapes(
    folders, tmp_path, family
):
    vocab = config_value(folders[family], "vocab_size")
    path = copy(folders, tmp_path, family, vocab_size=vocab + 8)
    name, more = EMBEDDING[family]
    have = load_file(path / "model.safetensors")[name].shape
    want = tuple(d + 8 if d == vocab else d for d in have)
    tail = f" (and {more} more tensors)" if more else ""
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    assert str(err.value) == (
        f"{path}: tensor {name!r} of the weights has shape {tuple(have)}, {FIELDS[family][0]} "
        f"of config.json needs {want}{tail}: config.json and the weights do not match"
    )


LAYER = {"gpt2": "transformer.h.{}.", "bert": "bert.encoder.layer.{}.",
         "llama": "model.layers.{}.", "bart": "model.encoder.layers.{}."}  # fmt: skip


@pytest.mark.parametrize("family", FIELDS)
def test_more_layers_in_config_json_than_in_the_weights_are_refused(folders, tmp_path, family):
    cls, *_, layers = FIELDS[family]
    path = copy(folders, tmp_path, family, **{layers: 3})
    third = LAYER[family].format(2)
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    message = str(err.value)
    count = int(message.split(" needs ")[1].split(" tensors")[0])
    assert count == sum(
        k.startswith(LAYER[family].format(1)) for k in load_file(path / "model.safetensors")
    )  # one layer's tensors, all named by the count
    assert message.startswith(f"{path}: {cls} of config.json needs {count} tensors: '{third}")
    assert message.endswith(
        f"... {count - 3} more, which the weights lack (does config.json name more layers than "
        "they hold?); refusing to start them from random values"
    )


@pytest.mark.parametrize("family", FIELDS)
def test_fewer_layers_in_config_json_than_in_the_weights_are_refused(folders, tmp_path, family):
    cls, *_, layers = FIELDS[family]
    path = copy(folders, tmp_path, family, **{layers: 1})
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    assert str(err.value).startswith(f"{path}: the weights hold ")
    assert f"tensors: '{LAYER[family].format(1)}" in str(err.value)
    assert str(err.value).endswith(
        f"which {cls} of config.json has no place for (do the weights hold more layers than "
        "config.json names?)"
    )


def test_one_missing_tensor_is_named(folders, tmp_path):
    path = copy(folders, tmp_path, "llama")
    edit_weights(path, lambda t: t.pop("model.layers.1.self_attn.v_proj.weight"))
    with pytest.raises(ValueError) as err:
        from_huggingface_dir(path)
    assert str(err.value) == (
        f"{path}: LlamaForCausalLM of config.json needs 1 tensor: "
        "'model.layers.1.self_attn.v_proj.weight', which the weights lack; refusing to start "
        "them from random values"
    )


def test_a_head_of_another_task_is_noted_as_unused(folders, tmp_path):
    """As bert-base-uncased: a masked-LM folder that also holds the next-sentence head."""
    path = copy(folders, tmp_path, "bert")
    nsp = {"cls.seq_relationship.weight": torch.ones(2, 16),
           "cls.seq_relationship.bias": torch.ones(2)}  # fmt: skip
    edit_weights(path, lambda t: t.update(nsp))
    with pytest.warns(WeightsNote) as notes:
        model = from_huggingface_dir(path)
    assert [str(n.message) for n in notes] == [
        f"{path}: not used by BertForMaskedLM (as transformers leaves them): 2 tensors: "
        "'cls.seq_relationship.bias', 'cls.seq_relationship.weight'"
    ]
    hf = transformers.BertForMaskedLM.from_pretrained(folders["bert"]).eval()
    ids = torch.tensor([[2, 5, 9, 4]])
    torch.testing.assert_close(model(ids).logits, hf(ids).logits)


def test_a_bert_body_saved_without_its_pooler_is_read_without_one(folders, tmp_path):
    path = tmp_path / "body"
    body = transformers.BertModel(
        transformers.BertConfig.from_pretrained(folders["bert"]), add_pooling_layer=False
    )
    body.save_pretrained(path)
    shutil.copy(folders["bert"] / "vocab.json", path)
    shutil.copy(folders["bert"] / "merges.txt", path)
    assert from_huggingface_dir(path).config.pooler is False  # not a random pooler


def test_a_head_the_folder_lacks_is_new_when_another_class_is_asked_for(folders, tmp_path):
    path = tmp_path / "body"
    config = transformers.BertConfig.from_pretrained(folders["bert"])
    transformers.BertModel(config).save_pretrained(path)
    with pytest.warns(WeightsNote) as notes:
        model = from_huggingface_dir(
            path, architecture="BertForSequenceClassification", tokenizer=None
        )
    assert type(model).__name__ == "EncoderClassifier"
    assert [str(n.message) for n in notes] == [
        f"{path}: BertForSequenceClassification's head is not in the weights and starts from "
        "random values: 2 tensors: 'classifier.bias', 'classifier.weight'"
    ]
    with pytest.raises(ValueError, match="needs 2 tensors: 'classifier.bias'"):
        from_huggingface_dir(  # the folder's own class: its head must be there
            _named(path, "BertForSequenceClassification"), tokenizer=None
        )


def _named(path: Path, cls: str) -> Path:
    meta = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**meta, "architectures": [cls]}))
    return path


@pytest.mark.parametrize(
    ("command", "family", "damage"),
    [
        ("eval", "gpt2", "truncated"),
        ("predict", "bert", "string size"),
        ("generate", "llama", "heads 0"),
        ("inspect", "bart", "activation"),
        ("explore", "gpt2", "more layers"),
        ("train", "bert", "missing tensor"),
    ],
)
def test_every_command_answers_in_one_line(cli, folders, tmp_path, command, family, damage):
    _, width, heads, act, layers = FIELDS[family]
    change = {"string size": {width: "16"}, "heads 0": {heads: 0}, "activation": {act: "x"},
              "more layers": {layers: 3}}.get(damage, {})  # fmt: skip
    path = copy(folders, tmp_path, family, **change)
    if damage == "truncated":
        (path / "model.safetensors").write_bytes((path / "model.safetensors").read_bytes()[:99])
    if damage == "missing tensor":
        edit_weights(path, lambda t: t.pop("bert.encoder.layer.0.output.dense.bias"))
    source = ["--init-from" if command == "train" else "--checkpoint", path]
    args = {
        "eval": ["--data", folders["text"]],
        "predict": ["--text", "the cat"],
        "generate": ["--prompt", "the", "--max-new-tokens", "2"],
        "inspect": ["--text", "the cat", "--out", tmp_path / "out"],
        "explore": ["--text", "the", "--export", tmp_path / "out"],
        "train": ["--data", folders["rows"], "--out", tmp_path / "out", "--steps", "1"],
    }[command]
    result = cli.run(command, *source, *args, "--device", "cpu")
    word = {"truncated": "model.safetensors: not a readable safetensors file",
            "string size": f"config.json: {width}='16' is not a size",
            "heads 0": f"config.json: {heads}=0 is not a size",
            "activation": f"config.json: {act}='x' is not an activation",
            "more layers": "which the weights lack",
            "missing tensor": "'bert.encoder.layer.0.output.dense.bias'"}[damage]  # fmt: skip
    cli.assert_user_error(result, f"{source[0]} {path}", word)
    assert not (tmp_path / "out").exists()


def test_weights_left_unused_are_a_note_on_the_command_line(cli, folders, tmp_path):
    path = copy(folders, tmp_path, "gpt2")
    edit_weights(path, lambda t: t.update({"score.weight": torch.ones(2, 16)}))
    result = cli.run("generate", "--checkpoint", path, "--prompt", "the",
                     "--max-new-tokens", "2", "--device", "cpu")  # fmt: skip
    assert result.code == 0, result.err
    assert result.err.splitlines() == [
        f"glassformer: note: {path}: not used by GPT2LMHeadModel (as transformers leaves "
        "them): 1 tensor: 'score.weight'"
    ]
