"""A checkpoint whose weights hold NaN or infinite values (a run that diverged, a damaged
file) is refused at load by every command that reads one: one line naming the tensor, exit 2,
nothing written."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer.models import DecoderLM, EncoderMLM
from glassformer.presets import preset
from glassformer.tokenizers import CharTokenizer

TEXT = "the cat sat on the mat.\n" * 4
DAMAGE = {"nan": (float("nan"), "1 NaN value"), "inf": (float("inf"), "1 infinite value")}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, object]:
    """A decoder LM and a masked LM, untrained, with a character tokenizer."""
    root = tmp_path_factory.mktemp("damaged")
    tok = CharTokenizer().train([TEXT])
    sizes = dict(vocab_size=tok.vocab_size, d_model=16, n_head=2, n_layer=1, max_len=16)
    torch.manual_seed(0)
    for name, model in (("lm", DecoderLM(preset("tiny", **sizes))),
                        ("mlm", EncoderMLM(preset("tiny-encoder", **sizes)))):  # fmt: skip
        model.save_pretrained(root / name, tok)
    (root / "text.txt").write_text(TEXT)
    return root


def damage(folder, tmp_path, kind: str) -> tuple[object, str, str]:
    """A copy of checkpoint ``folder`` with one damaged value; (copy, tensor name, count)."""
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    tensors = load_file(copy / "model.safetensors")
    name = sorted(n for n in tensors if n.endswith("q_proj.weight"))[0]
    value, count = DAMAGE[kind]
    tensors[name].view(-1)[3] = value
    save_file(tensors, copy / "model.safetensors", metadata={"format": "pt"})
    return copy, name, count


@pytest.mark.parametrize("kind", DAMAGE)
@pytest.mark.parametrize("command", ["generate", "eval", "predict", "inspect"])
def test_every_command_refuses_damaged_weights_naming_the_tensor(
    cli, checkpoints, tmp_path, command, kind
):
    folder = checkpoints / ("mlm" if command == "predict" else "lm")
    ckpt, name, count = damage(folder, tmp_path, kind)
    args = {
        "generate": ["--prompt", "the", "--max-new-tokens", "5"],
        "eval": ["--data", checkpoints / "text.txt"],
        "predict": ["--text", "the <MASK>at"],
        "inspect": ["--text", "the cat", "--out", tmp_path / "pictures"],
    }[command]
    before = sorted(p.name for p in ckpt.iterdir())
    result = cli.run(command, "--checkpoint", ckpt, *args, "--device", "cpu")
    cli.assert_user_error(
        result, f"{ckpt / 'model.safetensors'}: tensor {name!r} holds {count}", "damaged"
    )
    assert sorted(p.name for p in ckpt.iterdir()) == before  # no eval.json
    assert not (tmp_path / "pictures").exists()
