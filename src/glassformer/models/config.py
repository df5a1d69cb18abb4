"""ModelConfig: one validated, JSON-serialisable description of any of the three families.

    family="decoder"          GPT-like, Algorithm 10 (DTransformer): causal LM
    family="encoder"          BERT-like, Algorithm 9 (ETransformer): masked LM / classification
    family="encoder-decoder"  Vaswani et al., Algorithm 8 (EDTransformer): sequence-to-sequence

(the algorithms of Phuong & Hutter, "Formal Algorithms for Transformers" (2022)).

Choices are strings checked against fixed lists, so a saved ``config.json`` rebuilds the model
and a typo is refused with the allowed values. Sizes are checked against generous upper bounds
before anything is allocated (a vocabulary of 10^12 is refused, not attempted). The lists and
bounds are data (``ModelConfig.CHOICES``, ``ModelConfig.RANGES``; see limits.py); the rules
between fields, the other spellings and a config.json's types are checked in config_checks.py.

Each setting has one name. A field whose default is None ("the usual value": ``d_ff`` None is
4 · d_model) keeps None, so that a config derived from it (``replace(d_model=256)``, a preset
with ``--set model.d_model=256``) derives it again; the value a model is built with is the
property ``resolved_<field>`` (``resolved_d_ff``). Other spellings (``ff_dim``) are refused,
naming the field (``ModelConfig.OTHER_NAMES``).

``norm="batch"`` is for the encoder only: BatchNorm's training statistics run over every
position of the batch, which a causal decoder (the decoder family, the decoder of an
encoder-decoder) must not see (docs/concepts/norms-residuals.md).

Attention graphs (Formal Algorithms for Transformers, "Transformers as GNNs": each layer may
attend along its own graph): ``attention_graph``, ``decoder_attention_graph`` and
``cross_attention_graph`` hold specs that ``glassformer.graphs.layer_graphs`` reads, one graph
for every layer of their stack or one per layer (``"window:64*4,full*2"``); None is dense
attention. ``layer_graphs(field)`` gives the parsed graphs, one per layer.

A config does not change once made: assigning a field (``config.norm = "batch"``) is refused,
since a model built from it would skip the checks above (a BatchNorm decoder sees the future);
``config.replace(norm="batch")`` makes a new config, checked again.

Dropout sites: ``dropout`` acts on each sub-layer's output before the residual addition,
``embed_dropout`` on the embedding sum, ``attn_dropout`` on the attention weights A,
``ff_dropout`` on the feed-forward's hidden layer a(W_1 x), ``classifier_dropout`` on a
classifier's input; each of the four None is ``dropout`` (GPT-2's ``embd_pdrop`` and BERT's
``classifier_dropout`` may differ). ``ff_dropout`` None drops the hidden layer at ``dropout``,
torch.nn.TransformerEncoderLayer's layout (and the one of checkpoints saved before the field
existed); 0.0 is GPT-2's and BERT's layout, which drop only the feed-forward's output; BART
sets it from its ``activation_dropout``.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..graphs import AttentionGraph
from ..limits import Range, check_fields
from ..nn.feedforward import ACTIVATIONS
from ..nn.norms import NORM_KINDS
from ..nn.positional import POSITIONAL_KINDS, POSITIONAL_LAYOUTS
from ..nn.qk_projections import ATTENTION_SCORES
from ..structured import loads_json
from . import config_graphs
from .config_checks import check_names, check_relations, check_types
from .config_graphs import FAMILIES, GRAPH_FIELDS, as_spec

__all__ = ["EMBEDDINGS", "FAMILIES", "GRAPH_FIELDS", "POOLINGS", "ModelConfig"]

POOLINGS = ("cls", "mean", "last")
EMBEDDINGS = ("learned", "fixed")  # "fixed": the Trainer does not train them (finetune/)


@dataclass
class ModelConfig:
    """Hyper-parameters of a glassformer model. Defaults describe a small pre-norm GPT."""

    family: str = "decoder"
    """Which of the three families: "decoder" (GPT-like, `DecoderLM`), "encoder" (BERT-like)
    or "encoder-decoder" (Vaswani et al., `EncoderDecoder`)."""
    vocab_size: int = 256
    """Tokens in the vocabulary, the notes' N_V ("Notation"): the columns of W_e."""
    tgt_vocab_size: int | None = None
    """Encoder-decoder: target vocabulary (None: = vocab_size)."""
    max_len: int = 256
    """ℓ_max, the longest sequence (positions 0..max_len-1)."""
    d_model: int = 128
    """Width of the residual stream: the embedding size D of the notes ("Token Embedding")."""
    n_layer: int = 4
    """Blocks of the decoder (decoder), encoder (encoder, encoder-decoder): the notes' M."""
    n_decoder_layer: int | None = None
    """Encoder-decoder: decoder blocks (None: = n_layer)."""
    n_head: int = 4
    """Attention heads per layer, the notes' H; each head has d_model / n_head = K columns."""
    n_kv_head: int | None = None
    """Grouped-query attention: key/value heads, each shared by n_head / n_kv_head query heads
    (None: = n_head)."""
    attention_scores: str = "separate"
    """Self-attention: separate W^Q, W^K | shared W^QK | dot xᵀx′.

    The notes' "Self-Attention across the sequence": "separate" scores xᵀ U_qᵀ U_k x′, "shared"
    xᵀ Uᵀ U x′, "dot" xᵀ x′; the last two need n_kv_head = n_head."""
    d_ff: int | None = None
    """Feed-forward width (None: 4 · d_model): the hidden layer of the notes' "Multi-layer
    perceptron across features"."""
    activation: str = "gelu"
    """The feed-forward's nonlinearity: relu, gelu, gelu_tanh (GPT-2's) or swiglu."""
    norm: str = "layer"
    """batch: encoder only (its statistics would show a decoder the future).

    The norm of every sub-layer: "layer" (`LayerNorm`), "rms" (`RMSNorm`) or "batch"
    (`BatchNorm`)."""
    norm_first: bool = True
    """Pre-norm (GPT-2) or post-norm (Vaswani, BERT)."""
    norm_eps: float = 1e-5
    """ε added to the variance (or mean square) under the norms' square root."""
    final_norm: bool | None = None
    """Norm after the last block (None: = norm_first)."""
    embed_norm: bool = False
    """Norm right after the input embedding (BERT, BART)."""
    positional: str = "learned"
    """The positional encoding: sinusoidal, learned (the notes' W_p), rotary or none."""
    positional_layout: str = "interleaved"
    """Sinusoidal: sin/cos interleaved, or split halves."""
    position_offset: int = 0
    """Learned positions start at this row (BART uses 2)."""
    rope_base: float = 10000.0
    """Rotary: the base of the rotation frequencies θ_j = rope_base^(-j/K), j = 0, 2, ..., K - 2
    (K the head size)."""
    embed_scale: bool = False
    """Multiply token embeddings by √d_model (Vaswani)."""
    type_vocab_size: int = 0
    """BERT's segment embeddings (0: none)."""
    dropout: float = 0.0
    """On embeddings and on each sub-layer's output (residual branches)."""
    attn_dropout: float | None = None
    """On attention weights (None: = dropout)."""
    ff_dropout: float | None = None
    """On the feed-forward hidden layer a(W_1 x) (None: = dropout)."""
    embed_dropout: float | None = None
    """On the embedding sum (None: = dropout)."""
    classifier_dropout: float | None = None
    """On a classifier's input, the pooled vector (None: = dropout)."""
    bias: bool = True
    """Biases in attention, feed-forward and norms."""
    tie_embeddings: bool = True
    """Unembedding W_u = W_eᵀ."""
    share_embeddings: bool = True
    """Encoder-decoder: one token embedding for source and target."""
    head_bias: bool = False
    """Bias on the unembedding (BERT's MLM head, BART's final_logits_bias)."""
    mlm_transform: bool = False
    """BERT's dense + activation + norm before the MLM unembedding."""
    n_classes: int = 2
    """Classification head: the number of classes."""
    pooling: str = "cls"
    """Classification: the first (<BOS>/CLS) position, mean, or last real token."""
    pooler: bool = False
    """BERT's dense + tanh on the pooled vector."""
    pad_id: int = 0
    """The id of the <PAD> token, what batches are padded with (prediction, generation, the
    encoder-decoder's shifted labels)."""
    decoder_start_id: int = 1
    """Encoder-decoder: first decoder input (<BOS>; BART uses </s>)."""
    init_std: float = 0.02
    """Weights' std (untied token embeddings with embed_scale: 1/√d_model)."""
    embeddings: str = "learned"
    """"fixed": token, position, segment embeddings do not train."""
    attention_graph: str | list | dict | None = None
    """Self-attention graph: window:64*4,full*2.

    A glassformer.graphs spec, one graph for all layers or one per layer; None: dense
    attention."""
    decoder_attention_graph: str | list | dict | None = None
    """Encoder-decoder: decoder self-attention graph (a spec as attention_graph)."""
    cross_attention_graph: str | list | dict | None = None
    """Encoder-decoder: cross-attention graph (a spec as attention_graph)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form notes (e.g. converted from)."""

    # Names that are not fields, refused with the field to use instead.
    OTHER_NAMES: ClassVar[dict[str, str]] = {
        "ff_dim": "d_ff",
        "kv_heads": "n_kv_head",
        "target_vocab_size": "tgt_vocab_size",
        "decoder_layers": "n_decoder_layer",
        "activation_dropout": "ff_dropout",
    }
    # The allowed values, checked in __post_init__. The sizes' upper bounds are far beyond any
    # model this library can train, far below an absurd allocation.
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "family": FAMILIES,
        "activation": ACTIVATIONS,
        "norm": NORM_KINDS,
        "positional": POSITIONAL_KINDS,
        "positional_layout": POSITIONAL_LAYOUTS,
        "pooling": POOLINGS,
        "embeddings": EMBEDDINGS,
        "attention_scores": ATTENTION_SCORES,
    }
    RANGES: ClassVar[dict[str, Range]] = {
        "vocab_size": Range(1, 2**24),
        "tgt_vocab_size": Range(1, 2**24),
        "max_len": Range(1, 2**20),
        "d_model": Range(1, 2**16),
        "n_layer": Range(0, 1024),
        "n_decoder_layer": Range(1, 1024),
        "n_head": Range(1, 1024),
        "n_kv_head": Range(1),
        "d_ff": Range(1, 2**18),
        "norm_eps": Range(0.0, open_low=True),
        "position_offset": Range(0),
        "rope_base": Range(0.0, open_low=True),
        "type_vocab_size": Range(0, 2**10),
        "dropout": Range(0.0, 1.0, open_high=True),
        "attn_dropout": Range(0.0, 1.0, open_high=True),
        "ff_dropout": Range(0.0, 1.0, open_high=True),
        "embed_dropout": Range(0.0, 1.0, open_high=True),
        "classifier_dropout": Range(0.0, 1.0, open_high=True),
        "n_classes": Range(1, 2**20),
        "pad_id": Range(0),
        "decoder_start_id": Range(0),
        "init_std": Range(0.0, open_low=True),
    }

    def __new__(cls, *args: Any, **kwargs: Any) -> ModelConfig:
        # before the dataclass's __init__, which would say only "unexpected keyword argument"
        check_names(kwargs, cls.OTHER_NAMES)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        check_fields(self)
        check_relations(self)  # the rules between fields (config_checks.py)
        for name in GRAPH_FIELDS:
            setattr(self, name, as_spec(getattr(self, name)))  # an AttentionGraph: its spec
            self.layer_graphs(name)  # a spec that does not parse, or fit the stack, is refused
        object.__setattr__(self, "_checked", True)  # from here on, fields cannot change

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_checked"):
            raise dataclasses.FrozenInstanceError(
                f"ModelConfig.{name} cannot be changed once the config is made (a model built "
                f"from it would skip its checks); use config.replace({name}=...), which makes "
                "a new config and checks it"
            )
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if self.__dict__.get("_checked"):
            self.__setattr__(name, None)  # refused, as an assignment is
        super().__delattr__(name)

    # Derived sizes: head_dim, and each field whose None means a default, resolved -------------
    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    @property
    def resolved_n_kv_head(self) -> int:
        return self.n_head if self.n_kv_head is None else self.n_kv_head

    @property
    def resolved_d_ff(self) -> int:
        return 4 * self.d_model if self.d_ff is None else self.d_ff

    @property
    def resolved_ff_dropout(self) -> float:
        return self.dropout if self.ff_dropout is None else self.ff_dropout

    @property
    def resolved_embed_dropout(self) -> float:
        return self.dropout if self.embed_dropout is None else self.embed_dropout

    @property
    def resolved_classifier_dropout(self) -> float:
        return self.dropout if self.classifier_dropout is None else self.classifier_dropout

    @property
    def resolved_tgt_vocab_size(self) -> int:
        return self.vocab_size if self.tgt_vocab_size is None else self.tgt_vocab_size

    @property
    def resolved_n_decoder_layer(self) -> int:
        return self.n_layer if self.n_decoder_layer is None else self.n_decoder_layer

    def layer_graphs(self, name: str = "attention_graph") -> list[AttentionGraph | None]:
        """The attention graph of each layer of the stack the graph field ``name`` describes
        (None: dense attention): ``attention_graph``, the encoder's layers (encoder,
        encoder-decoder) or the decoder's (decoder); ``decoder_attention_graph`` and
        ``cross_attention_graph``, the decoder's layers of an encoder-decoder."""
        return config_graphs.layer_graphs(self, name)

    def block_options(self) -> dict[str, Any]:
        """Keyword arguments for glassformer.nn.Encoder / Decoder."""
        return dict(
            n_kv_head=self.n_kv_head,
            attention_scores=self.attention_scores,
            activation=self.activation,
            norm=self.norm,
            norm_first=self.norm_first,
            dropout=self.dropout,
            attn_dropout=self.attn_dropout,
            ff_dropout=self.ff_dropout,
            bias=self.bias,
            eps=self.norm_eps,
            final_norm=self.final_norm,
        )

    # Serialisation -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        if not isinstance(data, dict):
            raise ValueError(f"a model config must be a JSON object, got {type(data).__name__}")
        check_names(data, cls.OTHER_NAMES)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys {unknown}; allowed: {sorted(known)}")
        check_types(data, dataclasses.fields(cls))
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json_file(cls, path: str | Path) -> ModelConfig:
        path = Path(path)
        try:
            data = loads_json(path.read_bytes(), f"{path} (a model config)")
        except FileNotFoundError:
            raise ValueError(f"{path}: no such file") from None
        try:
            return cls.from_dict(data)
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes``; the copy's ``extra`` is its own (a model that writes into
        its config's ``extra`` changes neither this config nor the presets)."""
        changes.setdefault("extra", copy.deepcopy(self.extra))
        return dataclasses.replace(self, **changes)
