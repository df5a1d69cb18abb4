"""glassformer.fast is an overlay: ``use_fast_paths`` swaps reference classes for fast ones and
back, with the same parameters, and the reference code runs without the package."""

import subprocess
import sys
from pathlib import Path

import torch

from glassformer.fast import use_fast_paths
from glassformer.fast.packing import PackedEncoderBlock
from glassformer.models import EncoderDecoder, EncoderMLM
from glassformer.models.config import ModelConfig
from glassformer.nn import DecoderBlock, EncoderBlock

SMALL = dict(vocab_size=40, d_model=16, n_head=4, n_layer=2, max_len=16)


def test_fast_paths_off_give_back_exactly_the_reference_classes():
    model = EncoderMLM(ModelConfig(family="encoder", **SMALL))
    keys = list(model.state_dict())
    assert {type(b) for b in model.blocks} == {PackedEncoderBlock}  # as built
    model.use_fast_paths(False)
    assert {type(b) for b in model.blocks} == {EncoderBlock}
    assert model.fast_paths is False and list(model.state_dict()) == keys
    model.use_fast_paths(True)
    assert {type(b) for b in model.blocks} == {PackedEncoderBlock}


def test_only_the_classes_with_a_fast_form_change():
    model = use_fast_paths(EncoderDecoder(ModelConfig(family="encoder-decoder", **SMALL)), False)
    before = [type(m) for m in model.modules()]
    use_fast_paths(model, True)
    after = [type(m) for m in model.modules()]
    changed = {(a, b) for a, b in zip(before, after, strict=True) if a is not b}
    assert changed == {(EncoderBlock, PackedEncoderBlock)}
    assert {type(b) for b in model.decoder.blocks} == {DecoderBlock}


def test_the_reference_code_and_its_tests_need_no_fast_package():
    """glassformer.fast can be deleted: glassformer.nn runs with the package blocked, and the
    tests of the reference code (tests/nn) do not import it."""
    code = (
        "import sys; sys.modules['glassformer.fast'] = None\n"
        "import torch, glassformer.nn as nn\n"
        "enc = nn.Encoder(2, 8, 2, 16).eval()\n"
        "x = torch.randn(2, 5, 8)\n"
        "with torch.no_grad(): y = enc(x, nn.padding_mask(torch.tensor([5, 3]), 5))\n"
        "print(tuple(y.shape), sys.modules['glassformer.fast'])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(2,", "5,", "8)", "None"]
    tests_nn = Path(__file__).resolve().parents[1] / "nn"
    for path in tests_nn.rglob("*.py"):
        assert "glassformer.fast" not in path.read_text(encoding="utf-8"), path


def test_packed_and_reference_blocks_agree_in_values_and_gradients():
    """Training (gradients on) never packs: the fast block's output and gradients are the
    reference block's, bit for bit."""
    torch.manual_seed(0)
    block = EncoderBlock(16, 4, 32, norm_first=True)
    x = torch.randn(2, 7, 16, requires_grad=True)
    ref = block(x)
    (g_ref,) = torch.autograd.grad(ref.sum(), x)
    use_fast_paths(block)
    assert type(block) is PackedEncoderBlock
    fast = block(x)
    (g_fast,) = torch.autograd.grad(fast.sum(), x)
    assert torch.equal(fast, ref) and torch.equal(g_fast, g_ref)
