"""The optimised paths compute what the plain ones do: compiled vs eager, activation
checkpointing vs stored activations, bfloat16 autocast vs float32 (within a stated bound)."""

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderModel, preset

torch.manual_seed(0)
SMALL = dict(vocab_size=40, d_model=32, n_head=4, n_layer=2, max_len=16)


def grads(model, run):
    model.zero_grad(set_to_none=True)
    loss = run(model)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_compiled_equals_eager_without_graph_breaks():
    # aot_eager: TorchDynamo capture and AOTAutograd's joint graph, without Inductor's C++
    # code generation (a minute on this CPU; the benchmark's --compile runs it).
    model = DecoderLM(preset("tiny", **SMALL))
    x = torch.randint(0, 40, (2, 16))
    explained = torch._dynamo.explain(model)(x, labels=x)
    assert explained.graph_break_count == 0  # nothing forces a sync or leaves the graph
    compiled = torch.compile(model, backend="aot_eager")
    loss_c, g_c = grads(model, lambda m: compiled(x, labels=x).loss)
    loss_e, g_e = grads(model, lambda m: m(x, labels=x).loss)
    torch.testing.assert_close(loss_c, loss_e)
    for name in g_e:
        torch.testing.assert_close(g_c[name], g_e[name], msg=name)


@pytest.mark.parametrize("family", ["decoder", "encoder-decoder"])
def test_activation_checkpointing_gives_the_same_gradients(family):
    cfg = preset("tiny" if family == "decoder" else "tiny-seq2seq", **SMALL, dropout=0.1)
    model = (DecoderLM if family == "decoder" else EncoderDecoder)(cfg).train()
    x = torch.randint(5, 40, (3, 12))

    def run(m):
        return m(x, labels=x).loss

    torch.manual_seed(1)
    loss_plain, g_plain = grads(model, run)
    model.enable_checkpointing()
    torch.manual_seed(1)  # the same dropout masks: checkpointing replays the RNG
    loss_ckpt, g_ckpt = grads(model, run)
    assert torch.equal(loss_ckpt, loss_plain)
    for name in g_plain:
        torch.testing.assert_close(g_ckpt[name], g_plain[name], atol=1e-6, rtol=1e-5, msg=name)


def test_checkpointing_refuses_batch_norm():
    model = EncoderModel(preset("tiny-encoder", **SMALL, norm="batch"))
    with pytest.raises(ValueError, match="norm='batch'"):
        model.enable_checkpointing()


def test_bf16_autocast_stays_close_to_float32():
    """bfloat16 keeps 8 bits of mantissa (relative error 2^-8 ≈ 0.4% per rounding); through
    two blocks the logits stay within 0.1 and the loss within 1% of float32."""
    model = DecoderLM(preset("tiny", **SMALL)).eval()
    x = torch.randint(0, 40, (2, 16))
    ref = model(x, labels=x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = model(x, labels=x)
    assert low.logits.dtype == torch.bfloat16
    assert (low.logits.float() - ref.logits).abs().max() < 0.1
    assert abs(low.loss.item() - ref.loss.item()) < 0.01 * ref.loss.item()
