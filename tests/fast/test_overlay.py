"""glassformer.fast is chosen by the caller: a model built runs the reference code, a caller
(generation, prediction, evaluation) turns the fast paths on for its block of code, a model
told no keeps the reference code, and the reference code runs without the package."""

import subprocess
import sys
from pathlib import Path

import torch

from glassformer.fast import fast_paths
from glassformer.fast.packing import packing_for
from glassformer.models import EncoderMLM
from glassformer.models.config import ModelConfig
from glassformer.nn import Encoder, EncoderBlock, padding_mask

SMALL = dict(vocab_size=40, d_model=16, n_head=4, n_layer=2, max_len=16)


def test_a_model_takes_the_fast_paths_only_where_its_caller_chooses_them():
    model = EncoderMLM(ModelConfig(family="encoder", **SMALL))
    keys = list(model.state_dict())
    assert model.fast_paths is None and {type(b) for b in model.blocks} == {EncoderBlock}
    assert "Packed" not in repr(model)
    with fast_paths(model):
        assert model.fast_paths is True
    assert model.fast_paths is None and list(model.state_dict()) == keys
    model.use_fast_paths(False)  # told no: every caller keeps the reference code
    with fast_paths(model):
        assert model.fast_paths is False
    assert model.use_fast_paths() is model and model.fast_paths is True


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


def test_training_never_packs_and_keeps_the_reference_values_and_gradients():
    """With gradients on, ``packing_for`` says None: the stack runs the reference layout,
    bit for bit."""
    torch.manual_seed(0)
    enc = Encoder(2, 16, 4, 32, norm_first=True).eval()
    x = torch.randn(2, 7, 16, requires_grad=True)
    token_mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    mask = padding_mask(torch.tensor([7, 4]), 7)
    assert packing_for(enc, mask, token_mask) is None
    ref = enc(x, mask, token_mask=token_mask)
    (g_ref,) = torch.autograd.grad(ref.sum(), x)
    fast = enc(x, mask, token_mask=token_mask, packing=packing_for(enc, mask, token_mask))
    (g_fast,) = torch.autograd.grad(fast.sum(), x)
    assert torch.equal(fast, ref) and torch.equal(g_fast, g_ref)
