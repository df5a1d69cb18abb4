"""LayerNorm, RMSNorm and padding-aware BatchNorm against their formulas and torch.nn."""

import pytest
import torch

from glassformer.nn import BatchNorm, LayerNorm, RMSNorm, make_norm

torch.manual_seed(0)


def randomize(norm):
    with torch.no_grad():
        for p in norm.parameters():
            p.normal_()
    return norm


def test_layer_norm_formula():
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    ln = randomize(LayerNorm(8, eps=1e-5)).double()
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    expected = ln.weight * (x - mu) / torch.sqrt(var + 1e-5) + ln.bias
    torch.testing.assert_close(ln(x), expected)
    assert LayerNorm(8, bias=False).bias is None


def test_rms_norm_formula():
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    rms = randomize(RMSNorm(8, eps=1e-6)).double()
    expected = rms.weight * x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(rms(x), expected)


def test_batch_norm_without_padding_equals_torch_batchnorm1d():
    x = torch.randn(4, 6, 8)
    ours, ref = randomize(BatchNorm(8)), torch.nn.BatchNorm1d(8)
    ref.load_state_dict(ours.state_dict())
    for _ in range(3):  # training steps update the running statistics identically
        torch.testing.assert_close(ours(x), ref(x.reshape(-1, 8)).view(4, 6, 8))
        x = torch.randn(4, 6, 8) * 3 + 1
    torch.testing.assert_close(ours.running_mean, ref.running_mean)
    torch.testing.assert_close(ours.running_var, ref.running_var)
    ours.eval(), ref.eval()
    torch.testing.assert_close(ours(x), ref(x.reshape(-1, 8)).view(4, 6, 8))


def test_batch_norm_statistics_skip_padding():
    x = torch.randn(3, 5, 8)
    real = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    ours, ref = BatchNorm(8), torch.nn.BatchNorm1d(8)
    y = ours(x, real)
    torch.testing.assert_close(y[real], ref(x[real]))  # statistics of the 10 real tokens only
    torch.testing.assert_close(ours.running_var, ref.running_var)
    x2 = x.clone()
    x2[~real] = 1e6  # padded values must not leak into the statistics
    torch.testing.assert_close(BatchNorm(8)(x2, real)[real], y[real])


def test_batch_norm_needs_two_real_tokens_in_training():
    with pytest.raises(ValueError, match="at least 2 real tokens"):
        BatchNorm(4)(torch.randn(1, 3, 4), torch.tensor([[True, False, False]]))


def test_make_norm_rejects_unknown_kind():
    with pytest.raises(ValueError) as err:
        make_norm("group", 8)
    assert "'group'" in str(err.value) and "'layer'" in str(err.value)
    assert isinstance(make_norm("rms", 8), RMSNorm)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: LayerNorm(0), "LayerNorm: d_model=0 is not allowed: a positive int"),
        (lambda: RMSNorm(8, eps=0.0), "RMSNorm: eps=0.0 is not allowed: a finite number > 0"),
        (lambda: BatchNorm(8, momentum=2), "BatchNorm: momentum=2 is not allowed: a number in"),
        (lambda: make_norm("layer", -3), "LayerNorm: d_model=-3 is not allowed"),
    ],
)
def test_constructor_arguments_are_refused_by_name(make, words):
    with pytest.raises(ValueError) as err:
        make()
    assert words in str(err.value)
