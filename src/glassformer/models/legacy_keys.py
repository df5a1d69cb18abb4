"""Weight names of checkpoints written before the modules took TransformerLens's names.

Two earlier layouts are read:

* the first: a stack held ``layers`` and a final ``norm``, a block ``self_attn``,
  ``attn_norm``, ``cross_norm``, ``ffn`` and ``ff_norm``, an input embedding's norm ``norm``;
* the second: those were ``blocks``, ``ln_final``, ``attn``, ``ln1``, ``ln2``, ``mlp``, ``ln2``
  (``ln3`` in a block that cross-attends) and ``ln_embed``, but a decoder-only or encoder-only
  model held them in containers: ``embed.token`` / ``embed.pos`` / ``embed.segment`` /
  ``embed.ln_embed``, ``decoder.blocks`` (or ``encoder.blocks``), ``decoder.ln_final``,
  ``head.unembed`` (``head.transform``, ``head.pooler``, ``head.classifier``); an
  encoder-decoder held ``src_embed.*`` and ``tgt_embed.*`` beside ``encoder`` and ``decoder``.

Today a model holds ``embed``, ``pos_embed``, ``token_type_embed``, ``ln_embed``, ``blocks``,
``ln_final``, ``unembed`` (and its head's parts) itself; an encoder-decoder's ``encoder`` and
``decoder`` hold their embeddings. ``current_names`` maps each stored name to today's, so that
such a checkpoint loads (checkpoint.read_weights); today's names map to themselves.

A training checkpoint of a run with LoRA once held model.safetensors as the plain model, each
adapted weight merged (W + (alpha / r) B A), and beside it ``LEGACY_LORA_FILE``: each adapted
Linear p's ``p.lora_A``, ``p.lora_B`` and its unmerged W as ``p.base.weight``, which is
``p.weight`` today (nn/lora.py keeps W, A and B in model.safetensors).

Every layout before today's held an attention's projections as one fused Linear, ``in_proj``
= [W^Q; W^K; W^V] by rows ([W^{QK}; W^V] with attention_scores "shared", [W^V] with "dot");
today each is its own module (``q_proj``, ``k_proj``, ``v_proj``; ``qk_proj``).
``fused_rows`` gives each of today's projections its rows of the stored ``in_proj`` tensor
(self- and cross-attention alike), by the model's own projections and their sizes, so that
the split is the one the fused layer computed.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FUSED", "LEGACY_LORA_FILE", "current_names", "fused_rows"]

LEGACY_LORA_FILE = "lora.safetensors"

FUSED = "in_proj"  # the fused [W^Q; W^K; W^V] of every earlier layout
_PROJECTIONS = ("q_proj", "qk_proj", "k_proj", "v_proj")  # their order in it, by rows

_BLOCK = {"self_attn": "attn", "attn_norm": "ln1", "cross_norm": "ln2", "ffn": "mlp"}
_STACKS = {"encoder", "decoder"}
_EMBEDDINGS = {"embed", "src_embed", "tgt_embed"}


_EMBEDDING_PARTS = {"token": "embed", "pos": "pos_embed", "segment": "token_type_embed"}
_SIDES = {"src_embed": "encoder", "tgt_embed": "decoder"}


def current_names(stored: Iterable[str], family: str) -> dict[str, str]:
    """{today's name: the stored name} for the tensor names of a checkpoint of a model of
    ``family`` (decoder, encoder, encoder-decoder); a ValueError when two stored names (one
    earlier, one of today) are one tensor's."""
    stored = list(stored)
    cross = {_block_of(n) for n in stored if ".cross_norm." in n}  # blocks that cross-attend
    names: dict[str, str] = {}
    for name in stored:
        new = _unwrap(_rename(_unwrapped_lora(name), cross), family)
        if new in names:
            raise ValueError(
                f"tensors {names[new]!r} and {name!r} are both {new!r} (the earlier and "
                "today's module names); a checkpoint holds one of them"
            )
        names[new] = name
    return names


def _unwrapped_lora(name: str) -> str:
    """'blocks.0.mlp.fc1.base.weight' (the earlier LoRA layout's W) -> 'blocks.0.mlp.fc1.weight'."""
    return name.replace(".base.weight", ".weight")


def _block_of(name: str) -> str:
    """'decoder.layers.0.cross_norm.weight' -> 'decoder.layers.0'."""
    parts = name.split(".")
    return ".".join(parts[:3]) if len(parts) > 3 and parts[1] == "layers" else ""


def _rename(name: str, cross: set[str]) -> str:
    parts = name.split(".")
    if len(parts) > 2 and parts[1] == "layers" and parts[0] in _STACKS and parts[2].isdigit():
        block = ".".join(parts[:3])
        ff_norm = "ln3" if block in cross else "ln2"
        sub = parts[3] if len(parts) > 3 else ""
        sub = _BLOCK.get(sub, ff_norm if sub == "ff_norm" else sub)
        return ".".join([parts[0], "blocks", parts[2], sub, *parts[4:]])
    if len(parts) > 2 and parts[1] == "norm" and parts[0] in _STACKS:
        return ".".join([parts[0], "ln_final", *parts[2:]])
    if len(parts) > 2 and parts[1] == "norm" and parts[0] in _EMBEDDINGS:
        return ".".join([parts[0], "ln_embed", *parts[2:]])
    return name


def _unwrap(name: str, family: str) -> str:
    """The second layout's name -> today's (see the module docstring)."""
    first, _, rest = name.partition(".")
    if first in _SIDES and family == "encoder-decoder":  # src_embed.token.weight
        part, _, tail = rest.partition(".")
        return ".".join([_SIDES[first], _EMBEDDING_PARTS.get(part, part), tail])
    if first == "head":  # head.unembed.proj.weight -> unembed.proj.weight
        return rest
    if family == "encoder-decoder":
        return name
    if first == "embed" and rest.partition(".")[0] in (*_EMBEDDING_PARTS, "ln_embed"):
        part, _, tail = rest.partition(".")
        return ".".join([_EMBEDDING_PARTS.get(part, part), tail])
    if first in _STACKS and rest.partition(".")[0] in ("blocks", "ln_final"):
        return rest  # decoder.blocks.0.attn... -> blocks.0.attn...
    return name


def fused_rows(
    names: dict[str, str], rows: dict[str, int]
) -> tuple[dict[str, str], dict[str, tuple[int, int]]]:
    """(today's name -> the stored name, today's name -> its rows (start, stop) of the stored
    tensor) from ``names`` (``current_names``) and ``rows`` (each of the model's tensors -> its
    size along dim 0): a fused ``<attn>.in_proj.weight`` (or ``.bias``) becomes the model's
    ``<attn>.q_proj.weight``, ``<attn>.k_proj.weight``, ... whose rows it holds, one after
    another; a fused name the model has no projections for stays as it is (the caller calls
    it unexpected)."""
    out: dict[str, str] = {}
    spans: dict[str, tuple[int, int]] = {}
    for name, stored in names.items():
        attn, _, last = name.rpartition(f".{FUSED}.")
        parts = [f"{attn}.{p}.{last}" for p in _PROJECTIONS if f"{attn}.{p}.{last}" in rows]
        if not attn or not parts:
            out[name] = stored
            continue
        start = 0
        for part in parts:
            if part in names:
                raise ValueError(
                    f"tensors {stored!r} and {names[part]!r} both hold {part!r} (the fused and "
                    "today's projections); a checkpoint holds one of them"
                )
            out[part], spans[part] = stored, (start, start + rows[part])
            start += rows[part]
    return out, spans
