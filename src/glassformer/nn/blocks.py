"""Transformer blocks: attention and feed-forward sub-layers, each wrapped in a residual
connection and a norm (notes: "Transformer Layers"; Vaswani et al. Fig. 1).

The pseudocode of Phuong & Hutter, "Formal Algorithms for Transformers" (2022), has both
layouts: Algorithms 8 (EDTransformer) and 9 (ETransformer) are post-norm, "add, then
layer_norm", as Vaswani et al. and BERT; Algorithm 10 (DTransformer) is pre-norm,
"layer_norm, then attention, then add", as GPT-2. Each forward below writes them as lines,
pre-norm and post-norm as two branches:

    pre-norm  (GPT-2, Algorithm 10, norm_first=True)       X ← X + MHAttention(layer_norm(X))
                                                        X ← X + MLP(layer_norm(X))
    post-norm (Vaswani et al., Algorithms 8, 9,         X ← layer_norm(X + MHAttention(X))
               norm_first=False)                        X ← layer_norm(X + MLP(X))

EncoderBlock = self-attention + feed-forward (Algorithm 9's layer;
torch.nn.TransformerEncoderLayer).
DecoderBlock = masked self-attention + cross-attention to the encoder output Z + feed-forward
(Algorithm 8's decoder layer; torch.nn.TransformerDecoderLayer); with ``cross_attention=False``
it is the GPT layer of Algorithm 10 (DTransformer).

Dropout sites (training only; the identity in eval mode), pre-norm written out:

    A ← dropout_{attn_dropout}(softmax(Q Kᵀ / √d_k))        inside MHAttention
    X ← X + dropout_{dropout}(MHAttention(layer_norm(X)))
    X ← X + dropout_{dropout}(W_2 · dropout_{ff_dropout}(a(W_1 · layer_norm(X))))

``ff_dropout`` None is ``dropout``: torch.nn.TransformerEncoderLayer's layout (its ``dropout``
after the activation, ``dropout1`` / ``dropout2`` on the sub-layer outputs). GPT-2 (attn_pdrop,
resid_pdrop after each c_proj) and BERT (attention_probs_dropout_prob, hidden_dropout_prob
after each output dense) do not drop the hidden layer: ``ff_dropout=0.0``. BART drops it at
its own rate, ``activation_dropout``.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from ..graphs import AttentionGraph
from .feedforward import FeedForward
from .hooks import HookPoint
from .kv_cache import KVCache
from .multihead import MultiHeadAttention
from .norms import make_norm

__all__ = ["DecoderBlock", "EncoderBlock"]


class _Block(nn.Module):
    """The sub-layers of a block, under TransformerLens's names: ``attn`` after the norm
    ``ln1``, (``cross_attn`` after ``ln2``,) then ``mlp`` after ``ln2`` (``ln3`` when the
    block cross-attends), as in TransformerLens's GPT-2 and T5 blocks.

    Hook points: ``hook_resid_pre`` the stream X entering the block, ``hook_attn_out`` /
    ``hook_cross_attn_out`` / ``hook_mlp_out`` what each sub-layer writes (after dropout),
    ``hook_resid_mid`` (and ``hook_resid_mid_cross``) the stream after attention (and
    cross-attention), ``hook_resid_post`` the block's output; each norm's output is its
    ``hook_normalized``.

    Dropout: ``dropout`` on each sub-layer's output (``self.dropout``), ``attn_dropout`` on
    the attention weights (None: = dropout), ``ff_dropout`` on the feed-forward's hidden
    layer (``mlp.dropout``; None: = dropout, torch.nn's layout; 0.0: GPT-2's and BERT's).

    ``attention_scores``: how the self-attention ``attn`` scores a query against a key
    ("separate", "shared" or "dot": nn/qk_projections.py); cross-attention keeps separate
    W^Q, W^K (its queries and keys come from two sequences; the notes' argument is about one).

    ``graph`` and ``cross_graph``: the attention graphs (glassformer.graphs) of the block's
    self- and cross-attention, None for every key (Transformers as GNNs: each layer may use
    its own graph).
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        cross_attention: bool = False,
        n_kv_head: int | None = None,
        activation: str = "relu",
        norm: str = "layer",
        norm_first: bool = False,
        dropout: float = 0.0,
        attn_dropout: float | None = None,
        ff_dropout: float | None = None,
        bias: bool = True,
        eps: float = 1e-5,
        graph: AttentionGraph | None = None,
        cross_graph: AttentionGraph | None = None,
        attention_scores: str = "separate",
    ) -> None:
        super().__init__()
        self.norm_first = norm_first
        self.graph, self.cross_graph = graph, cross_graph  # None: every key (a complete graph)
        p_attn = dropout if attn_dropout is None else attn_dropout
        options = dict(n_kv_head=n_kv_head, bias=bias, dropout=p_attn)
        self.hook_resid_pre = HookPoint()
        self.attn = MultiHeadAttention(
            d_model, n_head, attention_scores=attention_scores, **options
        )
        self.ln1 = make_norm(norm, d_model, eps, bias)
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.cross_attn = None
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_head, **options)
            self.ln2 = make_norm(norm, d_model, eps, bias)
            self.hook_cross_attn_out = HookPoint()
            self.hook_resid_mid_cross = HookPoint()
        p_ff = dropout if ff_dropout is None else ff_dropout  # the hidden layer's rate
        self.mlp = FeedForward(d_model, d_ff, activation, bias=bias, dropout=p_ff)
        if cross_attention:
            self.ln3 = make_norm(norm, d_model, eps, bias)
        else:
            self.ln2 = make_norm(norm, d_model, eps, bias)
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()
        self.dropout = nn.Dropout(dropout)

    @property
    def ln_mlp(self) -> nn.Module:
        """The norm of the feed-forward sub-layer: ``ln3`` after cross-attention, else ``ln2``."""
        return self.ln2 if self.cross_attn is None else self.ln3

    def _drop(self, u: Tensor) -> Tensor:
        return self.dropout(u) if self.training else u  # the identity in eval mode


class EncoderBlock(_Block):
    """Self-attention then feed-forward, each in its residual connection (Algorithm 9's
    layer); bidirectional unless a mask or ``causal`` says otherwise.

    Parts under TransformerLens's names: ``ln1``, ``attn`` (`MultiHeadAttention`), ``ln2``,
    ``mlp`` (`FeedForward`). Hook points: ``hook_resid_pre`` the stream X entering the block,
    ``hook_attn_out`` and ``hook_mlp_out`` what each sub-layer writes (after dropout),
    ``hook_resid_mid`` the stream after attention, ``hook_resid_post`` the block's output.

    Args:
        d_model: the width C of the stream.
        n_head: attention heads H.
        d_ff: the feed-forward's hidden width.
        **options: keyword options of every block: ``n_kv_head`` (grouped-query attention,
            None: n_head), ``activation`` ("relu"; `FeedForward`), ``norm`` ("layer", "rms"
            or "batch"), ``norm_first`` (False: post-norm, Vaswani et al.; True: pre-norm,
            the notes and GPT-2), ``dropout`` (0.0, on each sub-layer's output),
            ``attn_dropout`` and ``ff_dropout`` (None: = dropout), ``bias`` (True), ``eps``
            (1e-5, the norms' ε), ``graph`` (an AttentionGraph for the self-attention, None:
            every key), ``attention_scores`` ("separate", "shared" or "dot").
    """

    def __init__(self, d_model: int, n_head: int, d_ff: int, **options: Any) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=False, **options)

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        causal: bool = False,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
    ) -> Tensor:
        """x (B, T, C) -> (B, T, C).

        Args:
            x: (B, T, C) the stream X.
            mask: broadcastable to (B, H, T, T), True = may attend.
            causal: add the causal mask.
            token_mask: (B, T) the real tokens, for the norms (BatchNorm skips padding).
            rope: (cos, sin) rotary tables of the T positions.
        """
        attn_args = dict(mask=mask, causal=causal, graph=self.graph, rope=rope)
        resid_pre = self.hook_resid_pre(x)
        if self.norm_first:  # pre-norm, the notes: X ← X + F(layer_norm(X))
            attn_out = self.attn(self.ln1(resid_pre, token_mask), **attn_args)[0]
            attn_out = self.hook_attn_out(self._drop(attn_out))
            resid_mid = self.hook_resid_mid(resid_pre + attn_out)
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(self.ln2(resid_mid, token_mask))))
            resid_post = resid_mid + mlp_out
        else:  # post-norm, Vaswani et al.: X ← layer_norm(X + F(X))
            attn_out = self.hook_attn_out(self._drop(self.attn(resid_pre, **attn_args)[0]))
            resid_mid = self.hook_resid_mid(self.ln1(resid_pre + attn_out, token_mask))
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(resid_mid)))
            resid_post = self.ln2(resid_mid + mlp_out, token_mask)
        return self.hook_resid_post(resid_post)


class DecoderBlock(_Block):
    """Masked self-attention, then cross-attention to the memory Z (if ``cross_attention``),
    then feed-forward, each in its residual connection (Algorithm 8's decoder layer; without
    cross-attention Algorithm 10's layer).

    Parts under TransformerLens's names: ``ln1``, ``attn`` (masked self-attention), ``ln2``,
    ``cross_attn`` (attention to Z), ``ln3``, ``mlp``; without cross-attention ``ln1``,
    ``attn``, ``ln2``, ``mlp``. Hook points as `EncoderBlock`'s, and ``hook_cross_attn_out``,
    ``hook_resid_mid_cross`` for the cross-attention.

    Args:
        d_model: the width C of the stream.
        n_head: attention heads H.
        d_ff: the feed-forward's hidden width.
        cross_attention: a cross-attention sub-layer to the memory Z (an encoder-decoder's
            decoder); False: the decoder-only (GPT) layer.
        **options: keyword options of every block: ``n_kv_head`` (grouped-query attention,
            None: n_head), ``activation`` ("relu"; `FeedForward`), ``norm`` ("layer", "rms"
            or "batch"), ``norm_first`` (False: post-norm, Vaswani et al.; True: pre-norm,
            the notes and GPT-2), ``dropout`` (0.0, on each sub-layer's output),
            ``attn_dropout`` and ``ff_dropout`` (None: = dropout), ``bias`` (True), ``eps``
            (1e-5, the norms' ε), ``graph`` (an AttentionGraph for the self-attention, None:
            every key), ``attention_scores`` ("separate", "shared" or "dot").
            ``cross_graph``: the cross-attention's graph.
    """

    def __init__(
        self,
        d_model: int,
        n_head: int,
        d_ff: int,
        *,
        cross_attention: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(d_model, n_head, d_ff, cross_attention=cross_attention, **options)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        causal: bool = True,
        token_mask: Tensor | None = None,
        rope: tuple[Tensor, Tensor] | None = None,
        cache: KVCache | None = None,
        memory_cache: KVCache | None = None,
    ) -> Tensor:
        """x (B, T, C), memory Z (B, S, C) -> (B, T, C).

        mask: extra self-attention mask (B, H, T, T_all) on top of the causal one;
        memory_mask: cross-attention mask broadcastable to (B, H, T, S);
        cache / memory_cache: KV caches for self- and cross-attention (incremental decoding).
        """
        if (memory is None) != (self.cross_attn is None):
            raise ValueError(
                "DecoderBlock: pass memory exactly when the block has cross-attention "
                f"(cross_attention={self.cross_attn is not None}, "
                f"memory given={memory is not None})"
            )
        attn_args = dict(mask=mask, causal=causal, graph=self.graph, rope=rope, cache=cache)
        if self.cross_attn is not None:  # the target positions query the memory Z
            q0 = 0 if cache is None else cache.position  # x's first position, not yet cached
            cross_args = dict(
                mask=memory_mask, graph=self.cross_graph, query_start=q0, cache=memory_cache
            )
        resid_pre = self.hook_resid_pre(x)
        if self.norm_first:  # pre-norm, the notes: X ← X + F(layer_norm(X))
            attn_out = self.attn(self.ln1(resid_pre, token_mask), **attn_args)[0]
            attn_out = self.hook_attn_out(self._drop(attn_out))
            resid = self.hook_resid_mid(resid_pre + attn_out)
            if self.cross_attn is not None:
                cross_out = self.cross_attn(self.ln2(resid, token_mask), memory, **cross_args)[0]
                cross_out = self.hook_cross_attn_out(self._drop(cross_out))
                resid = self.hook_resid_mid_cross(resid + cross_out)
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(self.ln_mlp(resid, token_mask))))
            resid_post = resid + mlp_out
        else:  # post-norm, Vaswani et al.: X ← layer_norm(X + F(X))
            attn_out = self.hook_attn_out(self._drop(self.attn(resid_pre, **attn_args)[0]))
            resid = self.hook_resid_mid(self.ln1(resid_pre + attn_out, token_mask))
            if self.cross_attn is not None:
                cross_out = self.cross_attn(resid, memory, **cross_args)[0]
                cross_out = self.hook_cross_attn_out(self._drop(cross_out))
                resid = self.hook_resid_mid_cross(self.ln2(resid + cross_out, token_mask))
            mlp_out = self.hook_mlp_out(self._drop(self.mlp(resid)))
            resid_post = self.ln_mlp(resid + mlp_out, token_mask)
        return self.hook_resid_post(resid_post)
