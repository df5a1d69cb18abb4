"""LoRA where the model is built, as PEFT's ``get_peft_model``: ``add_lora(model, targets,
rank, alpha, dropout)`` puts a ``LoRALinear`` (nn/lora.py: y = W x + b + (alpha / r) B A x) in
place of each nn.Linear whose path ends with a target and freezes every other parameter of
the model, W and b included; only A and B (and the parts ``keep`` names, e.g. a classifier's
new head) train. ``glassformer.Run`` calls it when ``train.lora_rank > 0``, before the Trainer
sees the model, which then trains what requires a gradient.

The targets are patterns of paths (paths.py): ``attn.q_proj`` ends ``blocks.3.attn.q_proj``
in every block. The default, the LoRA paper's choice, adapts W^Q and W^V of every
self-attention alone (``attn.q_proj``, ``attn.v_proj``); a target ending ``in_proj`` (the
fused [W^Q; W^K; W^V] of earlier models) names q_proj, k_proj and v_proj (qk_proj).

An adapted model keeps the plain model's state-dict names (``p.weight``, ``p.bias``) plus
``p.lora_A`` and ``p.lora_B``; its checkpoint records the adapters in config.json, so
``load_model`` builds the same model. ``merge_lora(model)`` folds each update
into its weight, W <- W + (alpha / r) B A, and puts plain nn.Linear layers back: a plain model,
which ``to_huggingface`` exports.
"""

from __future__ import annotations

from torch import nn

from ..models.legacy_keys import FUSED
from ..nn.lora import LoRALinear, adapt, check_lora
from .freeze import select
from .paths import check_pattern, ends_with, shown_names

__all__ = ["DEFAULT_TARGETS", "LoRALinear", "add_lora", "lora_layers", "merge_lora"]

# W^Q and W^V of every block's self-attention, the LoRA paper's choice.
DEFAULT_TARGETS = ("attn.q_proj", "attn.v_proj")


def add_lora(
    model: nn.Module,
    targets: list[str] | tuple[str, ...] = DEFAULT_TARGETS,
    rank: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
    *,
    keep: list[str] | tuple[str, ...] = (),
    where: str = "targets",
    rank_name: str = "rank",
) -> nn.Module:
    """``model`` (changed in place) with a ``LoRALinear`` in place of every nn.Linear whose
    path ends with one of ``targets``, and every other parameter frozen (the adapted W and b
    included) except those of the parts ``keep`` names by full path.

    Args:
        model: the model to adapt.
        targets: patterns of paths (paths.py) of the Linear layers to adapt.
        rank: r, from 1 to the smallest min(in, out) of the layers adapted.
        alpha: the update is scaled by alpha / r.
        dropout: dropout on the x that enters A, while the model trains.
        keep: full paths of parts that keep training (e.g. ``classifier``).
        where: the name messages give the targets (a run's ``train.lora_targets``).
        rank_name: the name messages give the rank (a run's ``train.lora_rank``).

    Raises:
        ValueError: a target that names no Linear (the message lists the model's Linears), a
            Linear whose weight is tied to another part, a rank above a layer's min(in, out),
            or a rank, alpha or dropout out of range; nothing is changed then.
    """
    rank, alpha, dropout = check_lora(rank, alpha, dropout, "LoRA")
    if isinstance(targets, str) or not isinstance(targets, list | tuple) or not targets:
        raise ValueError(
            f"{where}={targets!r} must be a non-empty list of module paths, e.g. "
            f"{list(DEFAULT_TARGETS)}"
        )
    linears = _linears(model)
    chosen: dict[str, nn.Linear] = {}
    for target in targets:
        check_pattern(target, where)
        found = {path: m for path, m in linears.items()
                 if any(ends_with(t, path) for t in _unfused(target))}  # fmt: skip
        if not found:
            raise ValueError(
                f"{where}: {target!r} names no nn.Linear of the {type(model).__name__}; "
                f"allowed: the ends of its Linears' paths: {shown_names(linears)}"
            )
        chosen.update(found)
    _check_untied(model, chosen, where, rank_name)
    _check_rank(chosen, rank, rank_name)
    kept = list(select(model, list(keep), where="LoRA keep").values()) if keep else []
    model.requires_grad_(False)
    adapt(model, [path for path in linears if path in chosen], rank, alpha, dropout)
    for p in kept:
        p.requires_grad_(True)
    return model


def _unfused(target: str) -> list[str]:
    """``target``, or for a target ending ``in_proj`` (attention's fused [W^Q; W^K; W^V],
    models/legacy_keys.py) the projections that hold it: q_proj, k_proj, v_proj (qk_proj)."""
    head, _, last = target.rpartition(".")
    if last != FUSED:
        return [target]
    return [f"{head}.{p}" if head else p for p in ("q_proj", "k_proj", "v_proj", "qk_proj")]


def lora_layers(model: nn.Module) -> dict[str, LoRALinear]:
    """Every LoRALinear of ``model`` by path."""
    return {path: m for path, m in model.named_modules() if isinstance(m, LoRALinear)}


def merge_lora(model: nn.Module) -> list[str]:
    """W <- W + (alpha / r) B A in every LoRALinear, each replaced by a plain nn.Linear
    holding the merged weight (``requires_grad=False``) and b; the merged paths."""
    layers = lora_layers(model)
    for path, m in layers.items():
        parent, _, name = path.rpartition(".")
        setattr(model.get_submodule(parent), name, m.merged())
    return list(layers)


def _linears(model: nn.Module) -> dict[str, nn.Linear]:
    """The plain nn.Linear layers LoRA may adapt (not a LoRALinear already)."""
    return {path: m for path, m in model.named_modules() if type(m) is nn.Linear}


def _check_untied(model: nn.Module, chosen: dict[str, nn.Linear], where: str, rank_name: str):
    """Refuse a chosen Linear whose weight is another part's too (a tied unembedding)."""
    first: dict[int, str] = {}
    shared: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first:
            shared[id(p)] = first[id(p)]
        first.setdefault(id(p), name)
    for path, m in chosen.items():
        if id(m.weight) in shared:
            raise ValueError(
                f"{where}: {path}.weight is tied to {shared[id(m.weight)]} (one matrix): LoRA "
                f"cannot adapt it alone; choose other targets (e.g. {list(DEFAULT_TARGETS)}), "
                f"or train the tied matrix without LoRA ({rank_name}=0; train.freeze keeps "
                "other parts fixed); a model built without init_from can also untie it "
                "(model.tie_embeddings=false)"
            )


def _check_rank(chosen: dict[str, nn.Linear], rank: int, rank_name: str) -> None:
    """``ValueError`` when ``rank`` exceeds min(in, out) of a chosen Linear: B A (out, in)
    has rank at most that, and a larger r only trains more numbers for the same update."""
    path, m = min(chosen.items(), key=lambda item: min(item[1].in_features, item[1].out_features))
    d_in, d_out = m.in_features, m.out_features
    largest = min(d_in, d_out)
    if rank > largest:
        raise ValueError(
            f"{rank_name}={rank} is larger than {path} allows: a Linear {d_in} -> {d_out}, "
            f"whose update B A has rank at most min({d_in}, {d_out}) = {largest}; allowed: "
            f"{rank_name} from 1 to {largest}"
        )
