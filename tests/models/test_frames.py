"""How deep the attention kernel sits under a model's forward: the glassformer frames on the
stack when F.scaled_dot_product_attention is called (a count of calls, not a timing)."""

import sys

import torch

from glassformer.models import DecoderLM, EncoderMLM
from glassformer.presets import preset

SMALL = dict(vocab_size=20, d_model=16, n_head=2, n_layer=1, max_len=8, d_ff=32)


def frames_at_the_kernel(model, ids) -> list[tuple[str, str]]:
    """(file under glassformer/, function) of each frame from the model's forward down to
    the call of the fused attention kernel."""
    found = []

    def profile(frame, event, arg):
        if event != "c_call" or found or arg.__name__ != "scaled_dot_product_attention":
            return
        stack = []
        while frame is not None:
            name = frame.f_code.co_filename.replace("\\", "/")
            if "/glassformer/" in name:
                stack.append((name.rsplit("/glassformer/", 1)[1], frame.f_code.co_name))
            frame = frame.f_back
        found.append(stack[::-1])

    sys.setprofile(profile)
    try:
        with torch.no_grad():
            model(ids)
    finally:
        sys.setprofile(None)
    return found[0]


def test_a_decoder_reaches_the_kernel_through_its_stack_block_and_attention():
    model = DecoderLM(preset("tiny", **SMALL)).eval()
    frames = frames_at_the_kernel(model, torch.tensor([[1, 2, 3]]))
    assert frames == [
        ("models/decoder.py", "forward"),
        ("nn/transformer.py", "forward"),
        ("nn/blocks.py", "forward"),
        ("nn/multihead.py", "forward"),
        ("nn/attend.py", "attend"),
    ]


def test_an_encoder_block_calls_its_attention_from_its_forward():
    model = EncoderMLM(preset("tiny-encoder", **SMALL)).eval()
    frames = frames_at_the_kernel(model, torch.tensor([[1, 2, 3]]))
    blocks = [f for f in frames if f[0] == "nn/blocks.py"]
    assert blocks == [("nn/blocks.py", "forward")]
    assert frames[frames.index(blocks[0]) + 1] == ("nn/multihead.py", "forward")
