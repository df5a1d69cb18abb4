"""What every Hugging Face converter shares: the optional import, option checks, and the
weight-copying engine driven by a list of ``Rule``s.

A ``Rule`` names one glassformer tensor and the Hugging Face tensor(s) it is made of:

    op="copy"  the same matrix (reshaped only where the shapes differ by a unit axis, e.g.
               BART's final_logits_bias (1, N_V) -> the head bias (N_V,))
    op="t"     transposed: GPT-2's Conv1D stores W as (in, out), nn.Linear as (out, in)
    op="cat"   rows stacked: SwiGLU's fc1 = [W_gate; W_up]

``part=(i, n)``: the glassformer tensor is the i-th of n equal blocks of rows of what ``op``
gives, e.g. glassformer's q_proj, k_proj, v_proj are the blocks of GPT-2's fused c_attn
([W^Q; W^K; W^V] once transposed, ``split``); on the way back the n blocks are stacked again.

The same rules run both ways (``transfer``). Every tensor of the destination must be written,
and every tensor of the source must be read, tied copies counted once: a conversion never
drops a weight silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

__all__ = [
    "ACT_FROM_HF",
    "ACT_TO_HF",
    "Rule",
    "check_option",
    "class_labels",
    "hf_labels",
    "linear",
    "require_config",
    "require_embed_dropout",
    "require_no_hidden_dropout",
    "require_transformers",
    "rule",
    "split",
    "token_id",
    "transfer",
    "unsupported",
]

INSTALL_HINT = "pip install glassformer[test] (or pip install transformers)"

# Hugging Face's activation names (transformers.activations.ACT2FN) <-> glassformer's
ACT_FROM_HF = {
    "gelu": "gelu",  # erf form
    "gelu_new": "gelu_tanh",  # GPT-2's tanh approximation
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}
ACT_TO_HF = {"gelu": "gelu", "gelu_tanh": "gelu_new", "relu": "relu"}


def require_transformers() -> Any:
    """Import ``transformers`` (an optional dependency) or say how to install it."""
    try:
        import transformers
    except ImportError as err:
        raise ImportError(
            f"Hugging Face conversion needs the optional package 'transformers': {INSTALL_HINT}"
        ) from err
    return transformers


def unsupported(where: str, option: str, value: Any, allowed: Any) -> ValueError:
    """The error for an option a converter cannot carry over."""
    return ValueError(f"{where}: {option}={value!r} is not supported; supported: {allowed}")


def check_option(where: str, option: str, value: Any, allowed: Sequence[Any]) -> None:
    """Raise ``unsupported`` unless ``value`` is one of ``allowed``."""
    if not any(value == a and type(value) is type(a) for a in allowed):
        shown = repr(allowed[0]) if len(allowed) == 1 else f"one of {tuple(allowed)}"
        raise unsupported(where, option, value, shown)


def require_config(where: str, config: Any, **allowed: Sequence[Any]) -> None:
    """Check a glassformer config against what the Hugging Face class ``where`` can express:
    ``field=(allowed values...)``; a ValueError names the first field that does not fit."""
    for name, values in allowed.items():
        value = getattr(config, name)
        if not any(value == a and type(value) is type(a) for a in values):
            shown = repr(values[0]) if len(values) == 1 else f"one of {tuple(values)}"
            raise ValueError(
                f"{where} cannot express the glassformer option {name}={value!r}; it needs "
                f"{name}={shown}"
            )


def require_no_hidden_dropout(where: str, config: Any, sites: str) -> None:
    """Refuse a config that drops the feed-forward's hidden layer (``ff_dropout``, None: =
    ``dropout``) for a Hugging Face class whose MLP has no dropout inside (``sites``: where it
    drops instead)."""
    rate = config.resolved_ff_dropout
    if rate:
        shown = f"ff_dropout={config.ff_dropout!r}"
        if config.ff_dropout is None:
            shown += f" (= dropout={config.dropout!r})"
        raise ValueError(
            f"{where} cannot express the glassformer option {shown}: it has no dropout on the "
            f"feed-forward's hidden layer ({sites}); it needs ff_dropout=0.0. Dropout only acts "
            "in training: set model.config = model.config.replace(ff_dropout=0.0) to export "
            "for inference"
        )


def require_embed_dropout(where: str, config: Any, sites: str) -> None:
    """Refuse an ``embed_dropout`` of its own for a Hugging Face class that drops the
    embeddings at its sub-layers' rate (``sites``)."""
    if config.resolved_embed_dropout != config.dropout:
        raise ValueError(
            f"{where} cannot express the glassformer option embed_dropout="
            f"{config.embed_dropout!r} beside dropout={config.dropout!r}: {sites}; it needs "
            "embed_dropout=None (= dropout). Dropout only acts in training: set model.config = "
            "model.config.replace(embed_dropout=None) to export for inference"
        )


def token_id(value: Any, vocab_size: int, default: int = 0) -> int:
    """A special-token id from a Hugging Face config as a valid glassformer id (``default``
    when it is missing, a list, or outside the vocabulary)."""
    return value if isinstance(value, int) and 0 <= value < vocab_size else default


@dataclass(frozen=True)
class Rule:
    """glassformer tensor ``glass`` <-> Hugging Face tensor(s) ``hf`` (see module docstring)."""

    glass: str
    hf: tuple[str, ...]
    op: Literal["copy", "t", "cat"] = "copy"
    part: tuple[int, int] | None = None  # (i, n): the i-th of n equal blocks of rows


def rule(glass: str, *hf: str, op: Literal["copy", "t", "cat"] = "copy") -> Rule:
    return Rule(glass, tuple(hf), op)


def linear(glass: str, hf: str, bias: bool = True) -> list[Rule]:
    """Rules for an nn.Linear / LayerNorm module: ``.weight`` (and ``.bias``) by name."""
    out = [rule(f"{glass}.weight", f"{hf}.weight")]
    if bias:
        out.append(rule(f"{glass}.bias", f"{hf}.bias"))
    return out


def split(glass: Iterable[str], hf: str, op: Literal["copy", "t"] = "copy") -> list[Rule]:
    """Rules for several glassformer tensors that are equal blocks of rows of one HF tensor
    (after ``op``), in order: GPT-2's c_attn -> q_proj, k_proj, v_proj."""
    glass = tuple(glass)
    return [Rule(g, (hf,), op, (i, len(glass))) for i, g in enumerate(glass)]


def transfer(
    rules: Sequence[Rule], src: nn.Module, dst: nn.Module, *, to_glass: bool, where: str
) -> None:
    """Copy ``src``'s weights into ``dst`` (glassformer <- HF if ``to_glass``, else the
    reverse), checking that every tensor on either side is accounted for."""
    src_sd = src.state_dict(keep_vars=True)
    dst_sd = dst.state_dict(keep_vars=True)
    out: dict[str, Tensor] = {}
    used: set[str] = set()
    blocks: dict[tuple, dict[int, Tensor]] = {}  # (hf, op, n) -> block i -> tensor
    for r in rules:
        if to_glass:
            joined = _join([src_sd[k].detach() for k in r.hf], r.op)
            if r.part is not None:  # the i-th of n blocks of rows
                joined = joined.chunk(r.part[1])[r.part[0]]
            out[r.glass] = _fit(joined, dst_sd[r.glass].shape, r.glass)
            used.update(r.hf)
            continue
        used.add(r.glass)
        if r.part is not None:  # stacked with the other blocks below
            blocks.setdefault((r.hf, r.op, r.part[1]), {})[r.part[0]] = src_sd[r.glass].detach()
            continue
        shapes = [dst_sd[k].shape for k in r.hf]
        for k, t in zip(r.hf, _split(src_sd[r.glass].detach(), r.op, shapes), strict=True):
            out[k] = _fit(t, dst_sd[k].shape, k)
    for (hf, op, n), got in blocks.items():
        t = _split(torch.cat([got[i] for i in range(n)]), op, [dst_sd[hf[0]].shape])[0]
        out[hf[0]] = _fit(t, dst_sd[hf[0]].shape, hf[0])
    _fill_tied(dst_sd, out, where)
    missing = sorted(set(dst_sd) - set(out))
    unread = sorted(k for k in _untied(src_sd, used) if k not in used)
    if missing or unread:
        raise ValueError(
            f"{where}: cannot convert this model: tensors not written {missing[:5]}, "
            f"tensors not read {unread[:5]}"
        )
    with torch.no_grad():
        dst.load_state_dict({k: out[k] for k in dst_sd}, strict=True)


def _join(parts: list[Tensor], op: str) -> Tensor:
    if op == "cat":
        return torch.cat(parts, dim=0)
    return parts[0].t() if op == "t" else parts[0]


def _split(t: Tensor, op: str, shapes: list[torch.Size]) -> list[Tensor]:
    if op == "cat":
        return list(t.split([s[0] for s in shapes], dim=0))
    return [t.t() if op == "t" else t]


def _fit(t: Tensor, shape: torch.Size, name: str) -> Tensor:
    """``t`` in the destination's shape; only unit axes may be added or dropped."""
    if t.shape == shape:
        return t
    if [d for d in t.shape if d != 1] != [d for d in shape if d != 1]:
        raise ValueError(f"{name}: shape {tuple(t.shape)} does not fit {tuple(shape)}")
    return t.reshape(shape)


def _fill_tied(dst_sd: dict[str, Tensor], out: dict[str, Tensor], where: str) -> None:
    """Tied tensors (one object under several names) get the value written to any of them."""
    groups: dict[int, list[str]] = {}
    for k, t in dst_sd.items():
        groups.setdefault(id(t), []).append(k)
    for names in groups.values():
        written = [k for k in names if k in out]
        if not written:
            continue
        value = out[written[0]]
        for k in written[1:]:
            if not torch.equal(out[k], value):
                raise ValueError(
                    f"{where}: {written[0]} and {k} are one tied tensor in the destination but "
                    "differ in the source; convert with untied embeddings"
                )
        for k in names:
            out[k] = value


def _untied(sd: dict[str, Tensor], used: set[str]) -> list[str]:
    """Names of ``sd`` minus the tied copies of tensors already read."""
    read = {id(sd[k]) for k in used if k in sd}
    return [k for k, t in sd.items() if k in used or id(t) not in read]


def class_labels(where: str, config: Any) -> list[str]:
    """A Hugging Face classifier's class names, by class index: its config's ``id2label``
    (``LABEL_0``, ``LABEL_1``, ... where config.json gives none, as transformers names them);
    a ValueError when two classes share a name."""
    id2label = getattr(config, "id2label", None) or {}
    names = [str(id2label.get(i, f"LABEL_{i}")) for i in range(config.num_labels)]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(
            f"{where}: id2label {dict(enumerate(names))} names the classes {twice} more than "
            "once; allowed: one distinct name per class"
        )
    return names


def hf_labels(config: Any) -> dict[str, Any]:
    """The ``num_labels``, ``id2label`` and ``label2id`` of a Hugging Face config for a
    glassformer classifier's config (its class names ``extra["labels"]``, or "0", "1", ...)."""
    names = [str(n) for n in config.extra.get("labels") or range(config.n_classes)]
    return {
        "num_labels": config.n_classes,
        "id2label": dict(enumerate(names)),
        "label2id": {n: i for i, n in enumerate(names)},
    }
