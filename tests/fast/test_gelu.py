"""fast/gelu.py: GELU's tanh form computed as x σ(2u) gives what F.gelu(approximate="tanh")
gives, values and gradients, and the formula itself in float64."""

import math

import pytest
import torch
import torch.nn.functional as F

from glassformer.fast.gelu import gelu_tanh
from glassformer.nn import FeedForward


def formula(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def inputs(dtype, requires_grad=True):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 64, 96, generator=g, dtype=dtype) * 3
    # the tails, where σ(2u) rounds to 0 or 1, and exact zeros
    x[0, 0, :6] = torch.tensor([-30.0, -9.0, 0.0, -0.0, 9.0, 30.0], dtype=dtype)
    return x.requires_grad_(requires_grad)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 2e-6), (torch.float64, 1e-13)])
def test_values_and_gradients_equal_f_gelu(dtype, tol):
    x = inputs(dtype)
    got = gelu_tanh(x)
    want = F.gelu(x, approximate="tanh")
    torch.testing.assert_close(got, want, rtol=0, atol=tol)
    torch.testing.assert_close(got.detach(), formula(x.detach()), rtol=0, atol=tol)
    g = torch.randn_like(want)
    (dx_got,) = torch.autograd.grad(got, x, g)
    (dx_want,) = torch.autograd.grad(want, x, g)
    torch.testing.assert_close(dx_got, dx_want, rtol=0, atol=5 * tol)
    assert got.grad_fn is not None and "SigmoidGelu" in type(got.grad_fn).__name__


def test_derivative_is_the_formula_derivative():
    x = inputs(torch.float64)
    (dx,) = torch.autograd.grad(gelu_tanh(x).sum(), x)
    (dx_formula,) = torch.autograd.grad(formula(x).sum(), x)
    torch.testing.assert_close(dx, dx_formula, rtol=0, atol=1e-13)


def test_without_graph_and_in_place_safety():
    x = inputs(torch.float32, requires_grad=False)
    before = x.clone()
    with torch.no_grad():
        y = gelu_tanh(x)
    torch.testing.assert_close(y, F.gelu(before, approximate="tanh"), rtol=0, atol=2e-6)
    assert torch.equal(x, before)  # the input is never written


def test_other_dtypes_fall_back_to_f_gelu():
    x = inputs(torch.float32, requires_grad=False).bfloat16()
    assert torch.equal(gelu_tanh(x), F.gelu(x, approximate="tanh"))


def test_second_derivative_equals_f_gelu():
    x = inputs(torch.float64)
    g = torch.randn_like(x)
    (dx,) = torch.autograd.grad(gelu_tanh(x), x, g, create_graph=True)
    (dx_want,) = torch.autograd.grad(F.gelu(x, approximate="tanh"), x, g, create_graph=True)
    torch.testing.assert_close(dx, dx_want, rtol=0, atol=1e-12)
    (ddx,) = torch.autograd.grad(dx.square().sum(), x)
    (ddx_want,) = torch.autograd.grad(dx_want.square().sum(), x)
    torch.testing.assert_close(ddx, ddx_want, rtol=0, atol=1e-10)


def test_feedforward_uses_it():
    torch.manual_seed(0)
    ff = FeedForward(16, 64, "gelu_tanh")
    x = torch.randn(3, 5, 16, requires_grad=True)
    h = ff.fc1(x)
    want = ff.fc2(F.gelu(h, approximate="tanh"))
    got = ff(x)
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    g = torch.randn_like(got)
    params = [x, *ff.parameters()]
    for a, b in zip(
        torch.autograd.grad(got, params, g), torch.autograd.grad(want, params, g), strict=True
    ):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
