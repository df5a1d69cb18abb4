"""MLM masking (BERT recipe): rates within statistically justified bounds, specials untouched.

Tolerances are 5 standard deviations of the binomial count being checked, so a correct
implementation fails with probability < 1e-6 per check (and the seeds are fixed anyway).
"""

from __future__ import annotations

import math

import pytest
import torch

from glassformer.data import IGNORE_INDEX, MLMCollator, mask_tokens
from glassformer.tokenizers.base import BOS_ID, EOS_ID, MASK_ID, PAD_ID, UNK_ID
from glassformer.tokenizers.char import CharTokenizer

SPECIALS = {PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID}
V = 30  # ids 5..29 are ordinary
K = V - len(SPECIALS)


def _batch(B: int, T: int, seed: int) -> torch.Tensor:
    """Rows <BOS> ordinary... [<UNK>] <EOS> <PAD>..., of random lengths."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(len(SPECIALS), V, (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    for b, n in enumerate(lengths.tolist()):
        ids[b, 0], ids[b, n - 1], ids[b, n:] = BOS_ID, EOS_ID, PAD_ID
        ids[b, n // 2] = UNK_ID
    return ids


def _mask(ids, seed, **kw):
    g = torch.Generator().manual_seed(seed)
    return mask_tokens(ids, mask_id=MASK_ID, special_ids=SPECIALS, vocab_size=V, generator=g, **kw)


def _within(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p))


def test_selection_rate_and_80_10_10_split():
    ids = _batch(256, 256, seed=0)
    out, labels = _mask(ids, seed=1)
    eligible = ~torch.isin(ids, torch.tensor(sorted(SPECIALS)))
    selected = labels != IGNORE_INDEX
    n, s = int(eligible.sum()), int(selected.sum())
    assert n > 40_000
    assert _within(s, n, 0.15)  # 15% of eligible tokens in expectation
    assert torch.equal(labels[selected], ids[selected])  # labels = the original ids
    masked = int((out[selected] == MASK_ID).sum())
    kept = int((out[selected] == ids[selected]).sum())
    replaced = s - masked - kept
    assert _within(masked, s, 0.8)
    # a random ordinary token equals the original with probability 1/K
    assert _within(replaced, s, 0.1 * (1 - 1 / K))
    assert _within(kept, s, 0.1 + 0.1 / K)
    replacements = out[selected & (out != MASK_ID) & (out != ids)]
    assert not torch.isin(replacements, torch.tensor(sorted(SPECIALS))).any()
    assert len(replacements.unique()) == K  # drawn from all ordinary ids


def test_specials_and_padding_never_touched():
    ids = _batch(64, 40, seed=2)
    out, labels = _mask(ids, seed=3, probability=1.0)  # select every eligible token
    special = torch.isin(ids, torch.tensor(sorted(SPECIALS)))
    assert torch.equal(out[special], ids[special])
    assert (labels[special] == IGNORE_INDEX).all()
    assert (labels[~special] != IGNORE_INDEX).all()
    unselected_out, unselected_labels = _mask(ids, seed=3)
    unselected = unselected_labels == IGNORE_INDEX
    assert torch.equal(unselected_out[unselected], ids[unselected])


def test_every_row_with_eligible_tokens_gets_at_least_one_label():
    # 4 eligible tokens per row: documented expectation 0.15 * 4 + 0.85**4 labels per row
    rows = 20_000
    ids = torch.tensor([[BOS_ID, 5, 6, 7, 8, EOS_ID, PAD_ID]] * rows)
    ids[::2, 1:5] = PAD_ID  # even rows: nothing eligible
    ids[::2, 5] = PAD_ID
    _, labels = _mask(ids, seed=4)
    per_row = (labels != IGNORE_INDEX).sum(1)
    assert (per_row[::2] == 0).all()
    odd = per_row[1::2].double()
    assert (odd >= 1).all()
    # exact distribution of max(Binomial(4, .15), 1): mean and standard deviation
    pk = [math.comb(4, k) * 0.15**k * 0.85 ** (4 - k) for k in range(5)]
    mean = sum(max(k, 1) * p for k, p in enumerate(pk))
    sd = math.sqrt(sum(max(k, 1) ** 2 * p for k, p in enumerate(pk)) - mean**2)
    assert mean == pytest.approx(0.6 + 0.85**4)
    assert abs(odd.mean().item() - mean) <= 5 * sd / math.sqrt(len(odd))


def test_same_generator_seed_same_masks_other_seed_other_masks():
    ids = _batch(32, 64, seed=5)
    a, b, c = _mask(ids, seed=7), _mask(ids, seed=7), _mask(ids, seed=8)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])
    assert torch.equal(ids, _batch(32, 64, seed=5))  # input not modified


def test_mlm_collator_pads_then_masks():
    tok = CharTokenizer().train("abcdefghij")
    items = [
        {"input_ids": torch.tensor(tok.encode(t, add_bos=True, add_eos=True))}
        for t in ["abcdefghij" * 3, "abc", "j"]
    ]
    collate = MLMCollator.for_tokenizer(tok, torch.Generator().manual_seed(0), probability=0.5)
    batch = collate(items)
    lengths = [len(it["input_ids"]) for it in items]
    expected_mask = torch.tensor([[1] * n + [0] * (32 - n) for n in lengths])
    assert torch.equal(batch["attention_mask"], expected_mask)
    pad = batch["attention_mask"] == 0
    assert (batch["input_ids"][pad] == PAD_ID).all() and (batch["labels"][pad] == -100).all()
    assert ((batch["labels"] != -100).sum(1) >= 1).all()  # even the 1-token row
    assert batch["labels"][2].tolist()[1] == tok.encode("j")[0]


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        ({"probability": 0.0}, "probability is 0.0"),
        ({"mask_fraction": 0.9, "random_fraction": 0.2}, "mask_fraction \\+ random_fraction"),
    ],
)
def test_bad_fractions_raise(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        _mask(_batch(2, 8, seed=0), seed=0, **kw)
