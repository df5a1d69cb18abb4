"""logit_difference: the patching metric built from answers (strings or ids, one pair for the
batch or one per prompt) equals the logit difference written out by hand, averaged, summed or
one per prompt; it names the positions it reads."""

from __future__ import annotations

import pytest
import torch

from glassformer import DecoderLM, preset
from glassformer.circuits import logit_difference, patch_residual
from glassformer.tokenizers import CharTokenizer


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    tok = CharTokenizer().train("abcdefgh")
    m = DecoderLM(preset("tiny", vocab_size=tok.vocab_size, n_layer=1, d_model=16, max_len=16))
    m.set_tokenizer(tok)
    return m.eval()


def test_strings_and_ids_give_the_hand_written_difference(model):
    ids = model.to_tokens(["abcab", "bcabc"])
    out = model(ids)
    a, c = model.to_single_token("a"), model.to_single_token("c")
    want = (out.logits[:, -1, a] - out.logits[:, -1, c]).mean()
    torch.testing.assert_close(logit_difference(model, "a", "c")(out), want)
    torch.testing.assert_close(logit_difference(model, a, c)(out), want)


def test_one_pair_per_prompt_and_per_prompt_positions(model):
    ids = model.to_tokens(["abcab", "bcabc"])
    out = model(ids)
    a, b, c = (model.to_single_token(s) for s in "abc")
    metric = logit_difference(model, ["a", "b"], ["c", "a"], position=[2, -1], per_prompt=True)
    first = out.logits[0, 2, a] - out.logits[0, 2, c]
    second = out.logits[1, -1, b] - out.logits[1, -1, a]
    want = (first + second) / 2
    torch.testing.assert_close(metric(out), want)


def test_reduce_none_sum_and_the_positions_it_reads(model):
    ids = model.to_tokens(["abcab", "bcabc"])
    out = model(ids)
    a, c = model.to_single_token("a"), model.to_single_token("c")
    each = out.logits[:, 2, a] - out.logits[:, 2, c]  # (B,)
    none = logit_difference(model, "a", "c", position=2, reduce="none")
    torch.testing.assert_close(none(out), each)
    torch.testing.assert_close(logit_difference(model, "a", "c", position=2, reduce="sum")(out),
                               each.sum())  # fmt: skip
    assert none.read_positions(2, 5).tolist() == [2, 2]
    torch.testing.assert_close(none.from_logits(out.logits[:, 2]), each)
    last = logit_difference(model, "a", "c", position=[-1, 1])
    assert last.read_positions(2, 5).tolist() == [4, 1]
    with pytest.raises(ValueError, match=r"reduce='median' is not known; choose one of"):
        logit_difference(model, "a", "c", reduce="median")


def test_drives_a_patching_grid(model):
    clean, corrupted = model.to_tokens("abcab"), model.to_tokens("abdab")
    metric = logit_difference(model, "c", "d")
    grid = patch_residual(model, clean, corrupted, metric, normalize=True, progress=False)
    torch.testing.assert_close(grid[0, 3], torch.tensor(1.0))  # position 3 (c/d, after <BOS>)


@pytest.mark.parametrize(
    ("right", "wrong", "options", "message"),
    [
        ("ab", "c", {}, "'ab' is 2 tokens"),
        (["a", "b", "c"], "c", {"per_prompt": True}, "right has 3 entries for 2 prompts"),
        ("a", 99, {}, "token 99; allowed: an id in 0..12 or a string"),
        ("a", "c", {"position": 9}, "position=9 is out of range"),
    ],
)
def test_bad_answers_are_named(model, right, wrong, options, message):
    out = model(model.to_tokens(["abcab", "bcabc"]))
    with pytest.raises(ValueError, match=message):
        logit_difference(model, right, wrong, **options)(out)


def test_a_list_of_answers_needs_per_prompt(model):
    """TransformerLens reads a list of targets as tokens shared by every prompt; glassformer
    reads it as one per prompt only when asked, and refuses it (when the metric is made)
    otherwise."""
    for right, wrong, arg in ((["a", "b"], "c", "right"), ("a", torch.tensor([1, 2]), "wrong")):
        with pytest.raises(
            ValueError,
            match=rf"logit_difference: {arg}=.* gives several tokens; "
            "write per_prompt=True for one token per prompt",
        ):
            logit_difference(model, right, wrong)
    with pytest.raises(ValueError, match="per_prompt='yes'; allowed: True or False"):
        logit_difference(model, "a", "c", per_prompt="yes")
