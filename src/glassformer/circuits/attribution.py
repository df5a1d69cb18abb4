"""Direct logit attribution: each term of the final residual stream's share of one logit.

The final stream is a sum of terms (glassformer.circuits.stream), and what follows it in a
decoder LM is the final norm and the unembedding, logit_v = W_u[v] · Norm(x) + b_v
("Brief Notes on Transformers", step 5: the unembedding produces the logits). With the norm's
scale frozen at the value it took on the actual x (glassformer.circuits.norms) the whole readout
is affine, so

    logit_v = Σ_i W_u[v] · L(c_i)  +  W_u[v] · β  +  b_v

exactly, to float rounding: the first sum is each term's direct share (Elhage et al. (2021), "A
Mathematical Framework for Transformer Circuits": the direct path of a head to the logits; as
TransformerLens's ``logit_attrs``), the rest are constants (``"ln_final_bias"``,
``"unembed_bias"``), each only where the model has that bias (RMSNorm has no β). A logit
difference (" Mary" against " John") uses W_u[v] − W_u[w].

The scale is frozen, so a share says what a term adds along the direction the rest of the
stream leaves it, not what the logit would be without it (ablation answers that).

Readouts it supports (linear after the final norm): a DecoderLM, an EncoderDecoder (its
decoder), an EncoderMLM without ``mlm_transform``, an EncoderClassifier or DecoderClassifier
without a ``pooler`` (its pooling, the first or last real token or the mean over real tokens,
is linear). BERT's MLM transform
a(W h + b) before its norm and BERT's pooler tanh(W v + b) are not linear, and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..models.encoder import EncoderMLM
from ..models.heads import ClassificationHead, LMHead, pool
from ..models.hooked import ActivationCache
from ..nn.lora import effective_weight
from .cached import model_of, require, stack_view
from .components import Components
from .norms import freeze_norm
from .stream import decompose_resid, stream_at, stream_names

__all__ = ["LogitAttribution", "logit_attribution"]

Token = int | str
Tokens = Token | Sequence[Token] | Tensor


@dataclass(eq=False)
class LogitAttribution:
    """Each term's direct share of a logit (or logit difference), one per batch row.

    ``terms`` (N, B): the shares, labelled as the stream's terms (``attribution["L1H0"]``,
    ``.terms.heads()`` the (layers, heads, B) grid); ``constants`` (M, B): the final norm's
    β and the unembedding's bias, read through the same direction (only those the model
    has: none for an RMSNorm model without an unembedding bias); ``logit`` (B,): the
    model's own logit (difference). ``total()`` = Σ terms + Σ constants = ``logit``."""

    terms: Components
    constants: Components
    logit: Tensor

    @property
    def labels(self) -> list[str]:
        return self.terms.labels

    def __getitem__(self, label: str) -> Tensor:
        return self.terms[label]

    def total(self) -> Tensor:
        """Σ_i share_i + the constants (B,): equals ``logit`` to float rounding."""
        return self.terms.sum() + self.constants.sum()

    def heads(self, kind: str = "self") -> Tensor:
        """The heads' shares as a (layers, heads, B) grid (Components.heads)."""
        return self.terms.heads(kind)


@dataclass(eq=False)
class Readout:
    """The affine map after the final stream: ``stack``, whose final stream it reads, the
    unembedding (or classifier) ``weight`` (V, C) and ``bias`` (V,) or None, and ``pooling``
    (None: one position; ``"cls"`` / ``"mean"`` / ``"last"``: a classifier's pooling)."""

    stack: str
    weight: Tensor
    bias: Tensor | None
    pooling: str | None
    bias_label: str


def readout(model: nn.Module, what: str) -> Readout:
    """The linear readout of ``model``, or a ValueError naming why it has none."""
    allowed = (
        "allowed: a DecoderLM, an EncoderDecoder (its decoder), an EncoderMLM without "
        "mlm_transform, an EncoderClassifier or DecoderClassifier without a pooler"
    )
    if isinstance(model, ClassificationHead):
        if model.pooler is not None:
            raise ValueError(
                f"{what}: the classifier's pooler tanh(W v + b) comes after the final stream "
                f"and is not linear, so no term has a direct share of a score; {allowed}"
            )
        proj, stack = model.classifier, model.family  # "encoder" or "decoder"
        bias = _detached(proj.bias)
        w = effective_weight(proj).detach()  # W (+ LoRA's update, nn/lora.py)
        return Readout(stack, w, bias, model.pooling, "classifier_bias")
    if not isinstance(model, LMHead):
        raise ValueError(f"{what}: a {type(model).__name__} has no output layer to read; {allowed}")
    if model.transform is not None:
        raise ValueError(
            f"{what}: the MLM head's transform Norm(a(W h + b)) (BERT's mlm_transform) comes "
            f"before the unembedding and is not linear, so no term has a direct share of a "
            f"logit; {allowed}"
        )
    proj = model.unembed.proj
    stack = "encoder" if isinstance(model, EncoderMLM) else "decoder"
    w = effective_weight(proj).detach()
    return Readout(stack, w, _detached(proj.bias), None, "unembed_bias")


def logit_attribution(
    cache: ActivationCache,
    tokens: Tokens | tuple[Tokens, Tokens],
    *,
    position: int | Sequence[int] | Tensor = -1,
    tokenizer=None,
    attention_mask: Tensor | None = None,
    per_prompt: bool = False,
) -> LogitAttribution:
    """Direct logit attribution of the cache's final stream (see the module docstring).

    tokens: the logit of one token, or the difference of two given as a tuple
        ``(token, other)``; each an id or a string that is one token under ``tokenizer``
        (default: the model's), the same for every prompt; with ``per_prompt=True`` also a
        list or (B,) tensor of them, one per prompt (batch row). For a classifier, class
        indices.
    position: the position read, one for every row or one per row ((B,), e.g. each row's last
        real token when right-padded); a classifier reads its pooled vector and ignores it.
    attention_mask: (B, T), 1 = real token: the tokens a classifier's mean pooling averages
        (the mask of the pass; None: every position, as the model does without one).
    per_prompt: True reads a list or tensor in ``tokens`` as one token per prompt. Without
        it several tokens are refused: TransformerLens reads a list of targets as tokens
        shared by every prompt, so the meaning is written out, not guessed.
    """
    what = "logit_attribution"
    refuse_ambiguous(tokens, per_prompt, what, "tokens")
    model = model_of(cache, what)
    read = readout(model, what)
    view = stack_view(model, read.stack, what)
    require(cache, [*stream_names(view, len(view.blocks)), "hook_logits"], what)
    terms = decompose_resid(cache, stack=read.stack)  # (N, B, T, C)
    b, t = terms.values.shape[1:3]
    values, constant = terms.values, None
    if view.final_norm is not None:  # Norm frozen: Σ_i L(c_i) + β
        frozen = freeze_norm(view.final_norm, stream_at(cache, view, len(view.blocks)))
        values, constant = frozen.linear(values), frozen.constant  # (N, B, T, C), (C,)
    device = values.device
    pos = _positions(position, b, t, what).to(device)
    arange = torch.arange(b, device=device)
    if read.pooling is None:
        values = values[:, arange, pos]  # (N, B, C)
    else:
        values = torch.einsum(
            "nbtc,bt->nbc", values, _pool_weights(read.pooling, attention_mask, b, t, values)
        )
    vocab = read.weight.shape[0]
    tokenizer = getattr(model, "tokenizer", None) if tokenizer is None else tokenizer
    plus, minus = (
        None if ids is None else ids.to(device)
        for ids in _token_pair(tokens, tokenizer, b, vocab, what, per_prompt=per_prompt)
    )
    direction = read.weight[plus] - (0 if minus is None else read.weight[minus])  # (B, C)
    shares = torch.einsum("nbc,bc->nb", values, direction)
    labels, consts = [], []
    if constant is not None and getattr(view.final_norm, "bias", None) is not None:
        labels.append("ln_final_bias")  # β; RMSNorm, or a LayerNorm without β: no term
        consts.append(direction @ constant)
    if read.bias is not None:
        labels.append(read.bias_label)
        consts.append(read.bias[plus] - (0 if minus is None else read.bias[minus]))
    logits = cache["hook_logits"]
    if read.pooling is None:
        logits = logits[arange, pos]  # (B, V)
    logit = logits.gather(1, plus[:, None])[:, 0]
    if minus is not None:
        logit = logit - logits.gather(1, minus[:, None])[:, 0]
    stacked = torch.stack(consts) if consts else shares.new_zeros((0, b))
    return LogitAttribution(Components(terms.labels, shares), Components(labels, stacked), logit)


def _detached(bias: Tensor | None) -> Tensor | None:
    return None if bias is None else bias.detach()


def _positions(position, b: int, t: int, what: str) -> Tensor:
    """``position`` as (B,) indices in 0..T-1 (negative ones count from the end)."""
    pos = torch.as_tensor(position)
    if pos.is_floating_point() or pos.dim() > 1 or (pos.dim() == 1 and len(pos) != b):
        raise ValueError(
            f"{what}: position={position!r}; allowed: an int, or {b} ints (one per batch row)"
        )
    pos = pos.long().expand(b)
    if ((pos < -t) | (pos >= t)).any():
        raise ValueError(f"{what}: position={position!r} is out of range for {t} positions")
    return pos % t


def _pool_weights(pooling: str, attention_mask, b: int, t: int, like: Tensor) -> Tensor:
    """(B, T) weights w of a classifier's pooling, v = Σ_t w_t h_t (it is linear): the
    model's own ``pool`` applied to the identity, so the first or last real token, or the
    real tokens' mean, exactly as the model pools."""
    if attention_mask is not None and tuple(attention_mask.shape) != (b, t):
        raise ValueError(
            f"logit_attribution: attention_mask has shape {tuple(attention_mask.shape)}; "
            f"allowed: ({b}, {t}), the mask of the pass"
        )
    real = None if attention_mask is None else attention_mask.to(like.device).bool()
    identity = torch.eye(t, dtype=like.dtype, device=like.device).expand(b, t, t)
    return pool(identity, real, pooling)  # (B, T)


def _token_pair(
    tokens, tokenizer, b: int, vocab: int, what: str, arg: str = "tokens", per_prompt=False
) -> tuple[Tensor, Tensor | None]:
    """(ids (B,), other ids (B,) or None) from ``tokens`` or ``(tokens, other)``; ``arg``:
    the argument's name in messages."""
    if isinstance(tokens, tuple):
        if len(tokens) != 2:
            raise ValueError(
                f"{what}: {arg}={tokens!r}; a tuple is a pair (token, other) for a logit "
                "difference (one token per prompt: a list with per_prompt=True)"
            )
        return _ids(tokens[0], tokenizer, b, vocab, what, arg, per_prompt), _ids(
            tokens[1], tokenizer, b, vocab, what, arg, per_prompt
        )
    return _ids(tokens, tokenizer, b, vocab, what, arg, per_prompt), None


def _several(tokens) -> bool:
    """Whether ``tokens`` holds several tokens (a list, or a tensor with an axis)."""
    return isinstance(tokens, list) or (isinstance(tokens, Tensor) and tokens.dim() > 0)


def refuse_ambiguous(tokens, per_prompt: bool, what: str, arg: str) -> None:
    """A ValueError for several tokens without ``per_prompt=True``: TransformerLens reads a
    list of targets as tokens shared by every prompt, glassformer as one per prompt, so the
    reading is asked for, never guessed."""
    if not isinstance(per_prompt, bool):
        raise ValueError(f"{what}: per_prompt={per_prompt!r}; allowed: True or False")
    sides = tokens if isinstance(tokens, tuple) else (tokens,)
    if per_prompt or not any(_several(side) for side in sides):
        return
    shown = tokens.tolist() if isinstance(tokens, Tensor) else tokens
    raise ValueError(
        f"{what}: {arg}={shown!r} gives several tokens; write per_prompt=True for one token "
        "per prompt (batch row), or one token alone for the same token in every prompt "
        "(several tokens shared by every prompt, as TransformerLens reads a list: one call "
        "per token)"
    )


def _ids(
    tokens, tokenizer, b: int, vocab: int, what: str, arg: str = "tokens", per_prompt=False
) -> Tensor:
    """One token for every prompt, or with ``per_prompt`` one per prompt, as ids (B,)."""
    refuse_ambiguous(tokens, per_prompt, what, arg)
    many = _several(tokens)
    items = (
        list(tokens.flatten().tolist() if isinstance(tokens, Tensor) else tokens)
        if many
        else [tokens.item() if isinstance(tokens, Tensor) else tokens]
    )
    if many and len(items) != b:
        raise ValueError(
            f"{what}: {arg} has {len(items)} entries for {b} prompts; with per_prompt=True "
            f"give one per prompt ({b})"
        )
    ids = [_id(item, tokenizer, vocab, what) for item in items]
    return torch.tensor(ids, dtype=torch.long).expand(b)


def _id(token, tokenizer, vocab: int, what: str) -> int:
    if isinstance(token, str):
        if tokenizer is None:
            raise ValueError(
                f"{what}: token {token!r} is a string but there is no tokenizer (the model has "
                "none attached); pass tokenizer=... or the token's id"
            )
        ids = tokenizer.encode(token)
        if len(ids) != 1:
            raise ValueError(
                f"{what}: {token!r} is {len(ids)} tokens under the tokenizer ({ids}); give a "
                "string that is one token, or an id"
            )
        token = ids[0]
    if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
        raise ValueError(f"{what}: token {token!r}; allowed: an id in 0..{vocab - 1} or a string")
    return token
