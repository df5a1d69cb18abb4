"""The BERT-like encoder-only transformer, Algorithm 9 (ETransformer) of
Phuong & Hutter, "Formal Algorithms for Transformers" (2022):

    X ← W_e[:, x] + W_p                     (+ segment embedding, + norm for BERT)
    for l = 1..L:  bidirectional self-attention and MLP, each with residual + norm
    then a head: masked-LM unembedding (ETraining: predict the tokens hidden by <MASK>)
    or pooled classification.

Padding (attention_mask = 0) is masked out of every attention and skipped by BatchNorm, and
positions count over the real tokens: a left-padded input gives the unpadded outputs.
"""

from __future__ import annotations

from torch import Tensor, nn

from ..nn import HookPoint, run_blocks
from ..nn.feedforward import activation_fn
from . import heads, inputs
from .base import GlassformerModel
from .config import ModelConfig
from .heads import pool
from .inputs import ids_length, key_mask, positions_from_mask
from .outputs import ModelOutput, lm_loss
from .stacks import encoder_stack

__all__ = ["EncoderClassifier", "EncoderMLM", "EncoderModel"]


class EncoderModel(GlassformerModel):
    """An encoder-only (BERT-like) transformer without a head: the family "encoder".

    Bidirectional self-attention over the whole input (the notes' "Self-Attention across the
    sequence" without the causal mask), Algorithm 9 (ETransformer) of Phuong & Hutter's paper
    "Formal Algorithms for Transformers". `EncoderMLM` and `EncoderClassifier` add a head.

    ``logits`` is None, ``hidden_states`` (B, T, C);
    with ``config.pooler`` also BERT's pooler, ``pooled`` = tanh(W v + b) (B, C) of the pooled
    vector v (``config.pooling``), as Hugging Face's BertModel computes ``pooler_output``.

    Modules under TransformerLens's names, so that a hook's name is its attribute path:
    ``embed``, ``pos_embed``, ``token_type_embed``, ``ln_embed`` (models/inputs.py),
    ``blocks`` (EncoderBlocks), ``ln_final``, then the head's (``add_head``).

    Args:
        config: the hyper-parameters; ``config.family`` must be "encoder".

    Examples:
        >>> import torch
        >>> from glassformer import EncoderMLM, ModelConfig
        >>> _ = torch.manual_seed(0)
        >>> config = ModelConfig(family="encoder", vocab_size=30, d_model=16, n_layer=1, n_head=2)
        >>> out = EncoderMLM(config)(torch.randint(0, 30, (2, 6)))
        >>> out.logits.shape, out.hidden_states.shape
        (torch.Size([2, 6, 30]), torch.Size([2, 6, 16]))
    """

    family = "encoder"
    embed_input = inputs.embed_input  # ids, positions -> x^(0), rotary tables

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.embed = inputs.token_embedding(config, config.vocab_size)  # W_e
        self.position_offset = config.position_offset  # W_p's first row (BART: 2)
        self.pos_embed = inputs.positional_encoding(config)  # W_p, sinusoids or rotary
        self.token_type_embed = inputs.segment_embedding(config)  # W_s or None
        self.ln_embed = inputs.embedding_norm(config)  # the norm of x^(0) or None
        self.embed_dropout = nn.Dropout(config.resolved_embed_dropout)
        self.hook_embed = HookPoint()  # (B, T, C): W_e[:, x[n]]
        if inputs.adds_positions(config):  # sinusoidal or learned: r_n added to x_n
            self.hook_pos_embed = HookPoint()
        if self.token_type_embed is not None:
            self.hook_token_type_embed = HookPoint()
        self.blocks, self.ln_final = encoder_stack(config)
        self.add_head(config)
        self.post_init()

    def add_head(self, config: ModelConfig) -> None:
        """The head's parts, after the blocks: here BERT's pooler and its hook points."""
        self.pooler = heads.pooler(config)  # BERT's tanh(W v + b) or None
        self.hook_pool = HookPoint()  # (B, C): the pooled vector v
        self.hook_pooled = HookPoint()  # (B, C): BERT's pooler output, tanh(W v + b)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        *,
        token_type_ids: Tensor | None = None,
    ) -> ModelOutput:
        """The hidden states of every position, and the head's outputs.

        Args:
            input_ids: (B, T) token ids.
            attention_mask: (B, T), 1 = a real token, 0 = padding (masked out of attention).
            labels: as the head scores them: (B, T) token ids for `EncoderMLM` (-100 = not
                scored), (B,) class indices for `EncoderClassifier`.
            token_type_ids: (B, T) BERT's segment ids (``config.type_vocab_size`` > 0).

        Returns:
            ``hidden_states`` (B, T, d_model) after the final norm, and the head's ``logits``
            and ``loss`` (None here: no head), ``pooled`` (B, d_model) with ``config.pooler``.
        """
        t = ids_length(input_ids)
        mask, real = key_mask(attention_mask, (input_ids.shape[0], t))  # (B, 1, 1, T), (B, T)
        positions = positions_from_mask(attention_mask, t, 0, input_ids.device, self.config.max_len)
        x, rope = self.embed_input(input_ids, positions, token_type_ids, token_mask=real)
        h = run_blocks(  # X ← Block_l(X) for l = 1..L, then the final norm: (B, T, C)
            self.blocks,
            x,
            mask,
            token_mask=real,
            rope=rope,
            ln_final=self.ln_final,
            checkpointing=self.checkpointing,
            packing=self.packing(mask, real),
        )
        return self.outputs(h, real, labels)

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        """The head's outputs from the hidden states h (B, T, C) and the real tokens (B, T):
        here the hidden states and, with a pooler, BERT's pooled vector."""
        if labels is not None:
            raise ValueError(
                "EncoderModel has no head to score labels; use EncoderMLM or EncoderClassifier"
            )
        pooled = None
        if self.pooler is not None:
            v = self.hook_pool(pool(h, real, self.config.pooling))  # (B, C)
            pooled = self.hook_pooled(self.pooler(v).tanh())
        return ModelOutput(logits=None, hidden_states=h, pooled=pooled)


class EncoderMLM(EncoderModel):
    """An encoder with a masked-LM head, BERT's pre-training model (ETraining in Phuong &
    Hutter's paper: predict the tokens hidden by <MASK>).

    Head: ``unembed`` (W_u, tied to W_e) after BERT's ``transform`` when
    ``config.mlm_transform``. ``forward`` gives logits (B, T, N_V); labels (B, T) hold the
    original ids at the masked positions and -100 elsewhere.

    Args:
        config: the hyper-parameters; ``config.family`` must be "encoder".
    """

    lm_logits = heads.lm_logits  # h (B, T, C) -> logits (B, T, N_V)

    def add_head(self, config: ModelConfig) -> None:
        """BERT's transform (None unless ``config.mlm_transform``), W_u tied to W_e."""
        self.transform, self.transform_norm = heads.mlm_transform(config)  # BERT's, or None
        if self.transform is not None:
            self.transform_activation = activation_fn(config.activation)  # a
            self.hook_transform = HookPoint()  # (B, T, C): a(W h + b)
        self.unembed = heads.unembedding(config, config.vocab_size, tie_to=self.embed)  # W_u
        self.hook_logits = HookPoint()

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        logits = self.lm_logits(h)  # (B, T, N_V)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)


class EncoderClassifier(EncoderModel):
    """An encoder with a classification head: the input, pooled (``config.pooling``), gives
    the logits of ``config.n_classes`` classes (the notes' "Output Layer": a linear layer
    and a softmax over the classes).

    Head: ``pooler`` (BERT's dense + tanh, None unless ``config.pooler``), ``classifier``
    (W_c v + b_c). ``forward`` gives logits (B, n_classes); labels (B,) are class indices.

    Args:
        config: the hyper-parameters; ``config.family`` must be "encoder".
    """

    class_logits = heads.class_logits  # h (B, T, C) -> logits (B, n_classes)
    class_names = heads.class_names

    def add_head(self, config: ModelConfig) -> None:
        """Pooling, BERT's pooler (None unless ``config.pooler``), W_c v + b_c."""
        self.pooling = config.pooling
        self.pooler = heads.pooler(config)
        self.classifier_dropout, self.classifier = heads.classifier(config)
        self.hook_pool, self.hook_pooled, self.hook_logits = HookPoint(), HookPoint(), HookPoint()

    def outputs(self, h: Tensor, real: Tensor | None, labels: Tensor | None) -> ModelOutput:
        logits = self.class_logits(h, real)  # (B, n_classes)
        loss = None if labels is None else lm_loss(logits, labels, shift=False)
        return ModelOutput(logits=logits, hidden_states=h, loss=loss)
