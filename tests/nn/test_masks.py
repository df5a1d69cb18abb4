"""Masks: True = may attend; causal b_nm = 0 iff m <= n; padding b_nm = 0 iff key m is real."""

import pytest
import torch

from glassformer.nn import (
    causal_mask,
    combine_masks,
    cross_attention_mask,
    padding_mask,
    padding_mask_from_ids,
)


def test_causal_mask_is_lower_triangular():
    m = causal_mask(4)
    expected = torch.tensor([[n >= j for j in range(4)] for n in range(4)])
    assert torch.equal(m, expected)


def test_causal_mask_with_offset_for_cached_keys():
    # 2 new queries at absolute positions 3, 4 of 5 keys
    expected = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(2, 5), expected)
    with pytest.raises(ValueError, match="t=3, s=2"):
        causal_mask(3, 2)


def test_padding_mask_from_lengths_and_ids_agree():
    lengths = torch.tensor([3, 1, 0])
    m = padding_mask(lengths, max_len=4)
    assert m.shape == (3, 1, 1, 4)
    assert m[:, 0, 0].tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
    ids = torch.tensor([[5, 6, 7, 0], [9, 0, 0, 0], [0, 0, 0, 0]])
    assert torch.equal(padding_mask_from_ids(ids, pad_id=0), m)
    assert padding_mask(lengths).shape == (3, 1, 1, 3)  # defaults to the longest


def test_padding_mask_rejects_bad_lengths():
    with pytest.raises(ValueError, match="1-D integer"):
        padding_mask(torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match=">= 0"):
        padding_mask(torch.tensor([2, -1]))
    with pytest.raises(ValueError, match="input_ids must be"):
        padding_mask_from_ids(torch.tensor([1, 2]), 0)


def test_combine_is_logical_and_and_skips_none():
    causal = causal_mask(3)
    pad = padding_mask(torch.tensor([3, 2]))
    both = combine_masks(None, causal, pad)
    assert both.shape == (2, 1, 3, 3)
    assert both[1, 0].tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 0]]
    assert combine_masks(None, None) is None
    with pytest.raises(ValueError, match="must be bool"):
        combine_masks(causal, causal.float())


def test_cross_attention_mask_keys_and_queries():
    keys = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)  # (B, S) source tokens
    queries = torch.tensor([[1, 1], [1, 0]], dtype=torch.bool)  # (B, T) target tokens
    m = cross_attention_mask(keys)
    assert m.shape == (2, 1, 1, 3) and torch.equal(m[:, 0, 0], keys)
    mq = cross_attention_mask(keys, queries)
    assert mq.shape == (2, 1, 2, 3)
    assert mq[1, 0].tolist() == [[1, 0, 0], [0, 0, 0]]  # the padded query attends to nothing
    with pytest.raises(ValueError, match="key_mask"):
        cross_attention_mask(keys.long())
