"""glassformer's patching grids against TransformerLens 4's ``transformer_lens.patching`` on the
same random models, loaded offline by both: a GPT-2 and a Llama with grouped-query heads
(4 query heads, 2 key/value heads), 2 layers, every weight perturbed. Each library runs the
same clean and corrupted ids; the grids agree to 1e-5.

TransformerLens's bridge keeps the raw weights (``enable_compatibility_mode(no_processing=
True)``), so its activations are the model's own. Layouts that differ (tested as such): its
``..._by_pos`` head grids are (L, T, H) where glassformer's are (L, H, T); its ``..._every``
head grids put 0 where a grouped-query model has no key/value head, glassformer NaN; its
direct path patching puts 0 in the layers up to the sender's, glassformer NaN. Its bridge's
``hook_resid_mid`` is the input of ``ln2`` (the MLP's copy of the stream), so patching it leaves
the stream the block outputs unchanged; glassformer's is the stream itself, and the two grids
differ (not compared).
"""

from __future__ import annotations

import pytest
import torch
import transformers
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from torch.testing import assert_close
from transformer_lens import patching
from transformer_lens.model_bridge import TransformerBridge

from glassformer.circuits import (
    patch_blocks,
    patch_heads,
    patch_heads_every,
    patch_path_receivers,
    patch_residual,
)
from glassformer.interop.huggingface import from_huggingface_dir

TOL = dict(atol=1e-5, rtol=0.0)
L, H, C, V, T = 2, 4, 32, 60, 5
A, B = 7, 42  # the metric: logit of A minus logit of B at the last position, first example


pytestmark = pytest.mark.usefixtures("offline")  # tests/reference/conftest.py


def _save(family: str, folder) -> type:
    """A random ``family`` model with every parameter perturbed, and a word-level tokenizer of
    its vocabulary (TransformerLens's bridge loads one), saved to ``folder``."""
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if family == "gpt2":
        cls = transformers.GPT2LMHeadModel
        sizes = dict(vocab_size=V, n_positions=16)
        config = transformers.GPT2Config(n_layer=L, n_embd=C, n_head=H, **sizes)
    else:
        cls = transformers.LlamaForCausalLM
        config = transformers.LlamaConfig(
            num_hidden_layers=L, hidden_size=C, num_attention_heads=H, num_key_value_heads=2,
            intermediate_size=48, vocab_size=V, max_position_embeddings=16,
        )  # fmt: skip
    hf = cls(config)
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(0.3 * torch.randn_like(p))
    hf.save_pretrained(folder)
    words = Tokenizer(WordLevel({f"w{i}": i for i in range(V)}, unk_token="w0"))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=words, bos_token="w1", eos_token="w2", unk_token="w0"
    )
    tokenizer.save_pretrained(folder)
    return cls


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def case(request, tmp_path_factory):
    """(glassformer model, TransformerLens bridge, clean ids, corrupted ids, its clean cache,
    its corrupted cache)."""
    folder = tmp_path_factory.mktemp(request.param)
    cls = _save(request.param, folder)
    hf = cls.from_pretrained(folder, local_files_only=True).eval()
    bridge = TransformerBridge.boot_transformers(str(folder), hf_model=hf, device="cpu")
    bridge.enable_compatibility_mode(no_processing=True)
    clean = torch.randint(0, V, (2, T), generator=torch.Generator().manual_seed(1))
    corrupted = clean.clone()
    corrupted[:, 1] = (clean[:, 1] + 11) % V  # a name swapped
    corrupted[0, 3] = (clean[0, 3] + 5) % V
    with torch.no_grad():
        _, clean_cache = bridge.run_with_cache(clean)
        _, corrupted_cache = bridge.run_with_cache(corrupted)
    return from_huggingface_dir(folder), bridge, clean, corrupted, clean_cache, corrupted_cache


def mine(out):
    return out.logits[0, -1, A] - out.logits[0, -1, B]


def theirs(logits):
    return logits[0, -1, A] - logits[0, -1, B]


def test_the_models_agree(case):
    model, bridge, clean, *_ = case
    with torch.no_grad():
        assert_close(model(clean).logits, bridge(clean), atol=1e-4, rtol=0.0)
    assert model.blocks[0].attn.n_kv_head == (bridge.cfg.n_key_value_heads or H)


@pytest.mark.parametrize("hook", ["resid_pre", "attn_out", "mlp_out"])
def test_residual_grids_equal_transformer_lens(case, hook):
    model, bridge, clean, corrupted, clean_cache, _ = case
    want = getattr(patching, f"get_act_patch_{hook}")(bridge, corrupted, clean_cache, theirs)
    got = patch_residual(model, clean, corrupted, mine, hook=hook)
    assert got.shape == (L, T)
    assert_close(got, want, **TOL)


def test_every_block_equals_transformer_lens(case):
    model, bridge, clean, corrupted, clean_cache, _ = case
    want = patching.get_act_patch_block_every(bridge, corrupted, clean_cache, theirs)
    got = patch_blocks(model, clean, corrupted, mine)
    assert got.shape == (3, L, T)
    assert_close(got, want, **TOL)


HEAD_ACTS = {"z": "out", "q": "q", "k": "k", "v": "v", "pattern": "pattern"}


@pytest.mark.parametrize("activation", list(HEAD_ACTS))
def test_head_grids_over_all_positions_equal_transformer_lens(case, activation):
    model, bridge, clean, corrupted, clean_cache, _ = case
    name = f"get_act_patch_attn_head_{HEAD_ACTS[activation]}_all_pos"
    want = getattr(patching, name)(bridge, corrupted, clean_cache, theirs)
    got = patch_heads(model, clean, corrupted, mine, activation=activation)
    n = model.blocks[0].attn.n_kv_head if activation in ("k", "v") else H
    assert got.shape == want.shape == (L, n)
    assert_close(got, want, **TOL)


@pytest.mark.parametrize("activation", list(HEAD_ACTS))
def test_head_grids_by_position_equal_transformer_lens(case, activation):
    """(L, H, T) here; TransformerLens's (L, T, H) for z, q, k, v and (L, H, T) for the
    pattern (each query position's row)."""
    model, bridge, clean, corrupted, clean_cache, _ = case
    name = f"get_act_patch_attn_head_{HEAD_ACTS[activation]}_by_pos"
    want = getattr(patching, name)(bridge, corrupted, clean_cache, theirs)
    got = patch_heads(model, clean, corrupted, mine, activation=activation, per_position=True)
    if activation != "pattern":
        want = want.transpose(1, 2)
    assert got.shape == want.shape
    assert_close(got, want, **TOL)


def test_each_attention_weight_equals_transformer_lens(case):
    model, bridge, clean, corrupted, clean_cache, _ = case
    want = patching.get_act_patch_attn_head_pattern_dest_src_pos(
        bridge, corrupted, clean_cache, theirs
    )
    got = patch_heads(
        model, clean, corrupted, mine, activation="pattern", per_position=True, per_source=True
    )
    assert got.shape == (L, H, T, T)
    assert_close(got, want, **TOL)


@pytest.mark.parametrize("per_position", [False, True])
def test_every_head_activation_equals_transformer_lens(case, per_position):
    """The five grids stacked; where a grouped-query model has no key/value head glassformer
    has NaN and TransformerLens 0."""
    model, bridge, clean, corrupted, clean_cache, _ = case
    every = "by_pos" if per_position else "all_pos"
    want = getattr(patching, f"get_act_patch_attn_head_{every}_every")(
        bridge, corrupted, clean_cache, theirs
    )
    got = patch_heads_every(model, clean, corrupted, mine, per_position=per_position)
    if per_position:
        want = want.transpose(2, 3)
    assert got.shape == want.shape == (5, L, H, *((T,) if per_position else ()))
    n_kv = model.blocks[0].attn.n_kv_head
    assert got[2:4, :, n_kv:].isnan().all() and (want[2:4, :, n_kv:] == 0).all()
    assert not got[:, :, :n_kv].isnan().any()
    assert_close(got.nan_to_num(0.0), want, **TOL)


@pytest.mark.parametrize("component", ["q", "k", "v"])
@pytest.mark.parametrize("head", [0, 3])
def test_path_patching_into_each_head_equals_transformer_lens_direct_path(case, component, head):
    """From head (0, head) into each later head's query, key or value (TransformerLens's
    get_act_patch_direct_path; it refuses k and v on a grouped-query model)."""
    model, bridge, clean, corrupted, clean_cache, corrupted_cache = case
    got = patch_path_receivers(model, clean, corrupted, mine, (0, head), component=component)
    n = H if component == "q" else model.blocks[0].attn.n_kv_head
    assert got.shape == (L, n) and got[0].isnan().all()
    if n != H:
        with pytest.raises(ValueError, match="GQA"):
            patching.get_act_patch_direct_path(
                bridge, corrupted, clean_cache, corrupted_cache, theirs, 0, head, component
            )
        return
    want = patching.get_act_patch_direct_path(
        bridge, corrupted, clean_cache, corrupted_cache, theirs, 0, head, component, verbose=False
    )
    assert_close(got[1:], want[1:], **TOL)
    assert (got[1] - theirs(bridge(corrupted))).abs().max() > 1e-4  # the paths move the metric
