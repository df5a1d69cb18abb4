"""How deep the attention kernel sits under a model's forward and under ``glassformer train``:
the glassformer frames on the stack when F.scaled_dot_product_attention is called (a count of
calls, not a timing)."""

import sys

import pytest
import torch
import torch.nn.functional as F

from glassformer.cli import main
from glassformer.models import (
    DecoderClassifier,
    DecoderLM,
    EncoderClassifier,
    EncoderDecoder,
    EncoderMLM,
)
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


def frames_of(call, stop: bool = False, every: bool = False):
    """The glassformer frames at the first call of the fused attention kernel in ``call()``
    (the kernel is wrapped for the call: a count of frames, nothing timed); ``stop`` ends
    the call there; ``every``: the frames of every call, each distinct stack once."""
    found, kernel = [], F.scaled_dot_product_attention

    def watched(*args, **kwargs):
        if not found or every:
            stack, frame = [], sys._getframe(1)
            while frame is not None:
                name = frame.f_code.co_filename.replace("\\", "/")
                if "/glassformer/" in name:
                    stack.append((name.rsplit("/glassformer/", 1)[1], frame.f_code.co_name))
                frame = frame.f_back
            if stack[::-1] not in found:
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
    return found if every else found[0]


MODEL_TO_KERNEL = [("nn/blocks.py", "run_blocks"), ("nn/blocks.py", "forward"),
                   ("nn/multihead.py", "forward")]  # fmt: skip


def test_a_decoder_reaches_the_kernel_through_a_block_and_its_attention():
    """4 frames in 3 files: the model's forward, its loop over the blocks, the block's formula,
    the attention's forward (nanoGPT: 3 in 1)."""
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


IDS, PADDED = torch.tensor([[1, 2, 3], [1, 2, 0]]), torch.tensor([[1, 1, 1], [1, 1, 0]])


@pytest.mark.parametrize("fast", [False, True], ids=["reference", "fast paths"])
@pytest.mark.parametrize(
    "family, preset_name, where",
    [
        (DecoderLM, "tiny", "models/decoder.py"),
        (DecoderClassifier, "tiny", "models/decoder_classifier.py"),
        (EncoderMLM, "tiny-encoder", "models/encoder.py"),
        (EncoderClassifier, "tiny-encoder", "models/encoder.py"),
    ],
)
def test_a_padded_batch_reaches_the_kernel_in_four_frames(family, preset_name, where, fast):
    """With a padding mask (and causal, for a decoder) every attention call of a one-stack
    family is 4 frames in 3 files, whichever layout the caller chose."""
    model = family(preset(preset_name, **SMALL, n_classes=2)).eval()
    model.use_fast_paths(fast)
    with torch.no_grad():
        stacks = frames_of(lambda: model(IDS, attention_mask=PADDED), every=True)
    assert stacks == [[(where, "forward"), *MODEL_TO_KERNEL]]


@pytest.mark.parametrize("fast", [False, True], ids=["reference", "fast paths"])
def test_an_encoder_decoder_reaches_the_kernel_in_four_frames(fast):
    """Padded source and target: the encoder's self-attention, then the decoder's masked
    self-attention and its cross-attention, each 4 frames in 3 files: ``forward`` runs both
    stacks' loops itself."""
    model = EncoderDecoder(preset("tiny-seq2seq", **SMALL)).eval()
    model.use_fast_paths(fast)
    with torch.no_grad():
        stacks = frames_of(
            lambda: model(IDS, PADDED, decoder_input_ids=IDS, decoder_attention_mask=PADDED),
            every=True,
        )
    assert stacks == [[("models/encoder_decoder.py", "forward"), *MODEL_TO_KERNEL]]


@pytest.mark.parametrize("fast", [False, True], ids=["reference", "fast paths"])
def test_encode_and_decode_reach_the_kernel_in_four_frames(fast):
    """Generation's separate calls: the source once through ``encode``, each step through
    ``decode``, padded, with and without a cache."""
    model = EncoderDecoder(preset("tiny-seq2seq", **SMALL)).eval()
    model.use_fast_paths(fast)
    with torch.no_grad():
        encoded = frames_of(lambda: model.encode(IDS, PADDED), every=True)
        memory = model.encode(IDS, PADDED)
        decoded = frames_of(lambda: model.decode(IDS, memory, PADDED, PADDED), every=True)
        cache = model.new_cache()
        cached = frames_of(
            lambda: model.decode(IDS, memory, PADDED, PADDED, cache=cache), every=True
        )
    assert encoded == [[("models/encoder_decoder.py", "encode"), *MODEL_TO_KERNEL]]
    assert decoded == cached == [[("models/encoder_decoder.py", "decode"), *MODEL_TO_KERNEL]]


def test_glassformer_train_reaches_the_kernel_in_ten_frames(tmp_path):
    """From the command's main: its run, the run's fit, the trainer's loop and step, the step's
    accumulated gradient (training/step.py), then the model's 4 frames to the kernel."""
    argv = ["train", "--data", "induction", "--task", "lm", "--model", "tiny", "--steps", "1",
            "--out", str(tmp_path / "run")]  # fmt: skip
    frames = frames_of(lambda: main(argv), stop=True)  # the first training step is enough
    assert frames == [
        ("cli/__init__.py", "main"),
        ("cli/train.py", "run"),
        ("runs/run.py", "fit"),
        ("training/trainer.py", "fit"),
        ("training/trainer.py", "train_step"),
        ("training/step.py", "accumulate_gradients"),
        ("models/decoder.py", "forward"),
        *MODEL_TO_KERNEL,
    ]
