"""What trains: freezing parts of a model by their paths, and fixed embeddings.

``freeze(model, ["embed", "blocks.0-5", "blocks.*.attn"])`` sets ``requires_grad=False`` on
every parameter of each part a pattern names (paths.py: names, indices, ``*``, ``A-B``), or on
the parameter a pattern names (``unembed.proj.bias``). A frozen parameter gets no gradient,
so the optimizer holds no state for it and its values stay exactly as they were. A tied matrix
is one parameter: freezing ``embed`` freezes a tied unembedding too, and freezing ``unembed``
freezes the embedding.

Fixed embeddings ("Formal Algorithms for Transformers": token and positional embeddings are
"fixed or learned"): ``ModelConfig.embeddings = "fixed"`` keeps the token embeddings, learned
positional embeddings and segment embeddings of every stack at their values, random or
pretrained; ``fix_embeddings(model)`` freezes them (the Trainer calls it). Sinusoidal and
rotary positions have no parameters: they are fixed already.
"""

from __future__ import annotations

from torch import nn

from .paths import check_pattern, matches

__all__ = ["fix_embeddings", "freeze", "part_names", "select", "trainable_count"]

_EMBEDDING_PARTS = ("embed", "pos_embed", "token_type_embed")


def freeze(model: nn.Module, patterns: list[str], *, where: str = "freeze") -> list[str]:
    """Freeze what each of ``patterns`` names; the names of the parameters frozen (as
    ``model.named_parameters()`` gives them, a tied one under its first name). A pattern that
    names nothing is refused (``ValueError`` naming it and the model's parts), before
    anything is frozen."""
    chosen = select(model, patterns, where=where)
    for p in chosen.values():
        p.requires_grad_(False)
    return [name for name, p in model.named_parameters() if id(p) in chosen]


def select(
    model: nn.Module, patterns: list[str], *, where: str = "freeze"
) -> dict[int, nn.Parameter]:
    """The parameters (by id) of the parts ``patterns`` name, each pattern checked as
    ``freeze`` checks it; nothing is changed."""
    if isinstance(patterns, str) or not isinstance(patterns, list | tuple):
        raise ValueError(f"{where}={patterns!r} must be a list of module paths, e.g. ['embed']")
    modules = dict(model.named_modules())
    params = dict(model.named_parameters(remove_duplicate=False))
    chosen: dict[int, nn.Parameter] = {}
    for pattern in patterns:
        check_pattern(pattern, where)
        found = [m for path, m in modules.items() if path and matches(pattern, path)]
        named = [p for name, p in params.items() if matches(pattern, name)]
        if not found and not named:
            raise ValueError(
                f"{where}: {pattern!r} names no part of the {type(model).__name__}; its parts: "
                f"{part_names(model)}"
            )
        for m in found:
            chosen.update((id(p), p) for p in m.parameters())
        chosen.update((id(p), p) for p in named)
    return chosen


def fix_embeddings(model: nn.Module) -> list[str]:
    """Freeze the token, learned positional and segment embeddings of every stack (an
    encoder-decoder's ``encoder.embed``, ``decoder.pos_embed``, ...); the names frozen. A tied
    unembedding is the token embedding, so it is fixed with it; an untied one trains."""
    patterns = [
        path
        for path, m in model.named_modules()
        if path.rsplit(".", 1)[-1] in _EMBEDDING_PARTS and any(True for _ in m.parameters())
    ]
    return freeze(model, patterns, where="model.embeddings='fixed'") if patterns else []


def part_names(model: nn.Module) -> str:
    """The parts of ``model`` that hold parameters, as a message lists them: its top-level
    parts, and each list of blocks as a range (``blocks.0-3``, ``encoder.blocks.0-1``)."""
    names = []
    for path, m in model.named_modules():
        if next(m.parameters(), None) is None:  # hook points, dropout: nothing to freeze
            continue
        depth = path.count(".") + 1 if path else 0
        if depth == 1:
            names.append(path)
        if isinstance(m, nn.ModuleList) and len(m) and depth <= 2:
            names.append(f"{path}.0-{len(m) - 1}" if len(m) > 1 else f"{path}.0")
    return ", ".join(dict.fromkeys(names))


def trainable_count(model: nn.Module) -> tuple[int, int]:
    """(parameters that train, all parameters), a tied matrix counted once."""
    params = list(model.parameters())
    return sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params)
