"""How deep the attention kernel sits under a model's forward and under ``glassformer train``:
the glassformer frames on the stack when F.scaled_dot_product_attention is called (a count of
calls, not a timing)."""

import sys

import torch
import torch.nn.functional as F

from glassformer.cli import main
from glassformer.models import DecoderLM, EncoderMLM
from glassformer.presets import preset

SMALL = dict(vocab_size=20, d_model=16, n_head=2, n_layer=1, max_len=8, d_ff=32)


def frames_at_the_kernel(model, ids) -> list[tuple[str, str]]:
    """(file under glassformer/, function) of each frame from the model's forward down to
    the call of the fused attention kernel."""
    with torch.no_grad():
        return frames_of(lambda: model(ids))


class Seen(BaseException):
    """Raised at the kernel's first call when ``stop``: the rest of the call is not needed
    (a BaseException, which the command's error handling lets through)."""


def frames_of(call, stop: bool = False) -> list[tuple[str, str]]:
    """The glassformer frames at the first call of the fused attention kernel in ``call()``
    (the kernel is wrapped for the call: a count of frames, nothing timed); ``stop`` ends
    the call there."""
    found, kernel = [], F.scaled_dot_product_attention

    def watched(*args, **kwargs):
        if not found:
            stack, frame = [], sys._getframe(1)
            while frame is not None:
                name = frame.f_code.co_filename.replace("\\", "/")
                if "/glassformer/" in name:
                    stack.append((name.rsplit("/glassformer/", 1)[1], frame.f_code.co_name))
                frame = frame.f_back
            found.append(stack[::-1])
            if stop:
                raise Seen
        return kernel(*args, **kwargs)

    F.scaled_dot_product_attention = watched
    try:
        call()
    except Seen:
        pass
    finally:
        F.scaled_dot_product_attention = kernel
    return found[0]


MODEL_TO_KERNEL = [("nn/blocks.py", "run_blocks"), ("nn/blocks.py", "forward"),
                   ("nn/multihead.py", "forward"), ("nn/multihead.py", "attend")]  # fmt: skip


def test_a_decoder_reaches_the_kernel_through_a_block_and_its_attention():
    """4 frames in 3 files: the model's loop over its blocks, the block's formula, the
    projections, attend() (nanoGPT: 3 in 1)."""
    model = DecoderLM(preset("tiny", **SMALL)).eval()
    frames = frames_at_the_kernel(model, torch.tensor([[1, 2, 3]]))
    assert frames == [("models/decoder.py", "forward"), *MODEL_TO_KERNEL]


def test_an_encoder_reaches_the_kernel_the_same_way_with_or_without_its_fast_paths():
    """The one loop runs the one block whichever layout the caller chose."""
    model = EncoderMLM(preset("tiny-encoder", **SMALL)).eval()
    ids = torch.tensor([[1, 2, 3]])
    assert frames_at_the_kernel(model, ids) == [("models/encoder.py", "forward"), *MODEL_TO_KERNEL]
    model.use_fast_paths(True)
    assert frames_at_the_kernel(model, ids) == [("models/encoder.py", "forward"), *MODEL_TO_KERNEL]


def test_glassformer_train_reaches_the_kernel_in_nine_frames(tmp_path):
    """From the command's main: its run, the run's fit, the trainer's loop and step, then the
    model (at most 9 frames)."""
    argv = ["train", "--data", "induction", "--task", "lm", "--model", "tiny", "--steps", "1",
            "--out", str(tmp_path / "run")]  # fmt: skip
    frames = frames_of(lambda: main(argv), stop=True)  # the first training step is enough
    assert frames == [
        ("cli/__init__.py", "main"),
        ("cli/train.py", "run"),
        ("runs/run.py", "fit"),
        ("training/trainer.py", "fit"),
        ("training/trainer.py", "train_step"),
        ("models/decoder.py", "forward"),
        *MODEL_TO_KERNEL,
    ]
