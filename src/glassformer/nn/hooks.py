"""Hook points: named places in the forward pass where an intermediate tensor can be read or
replaced.

A ``HookPoint`` is the identity, ``x = self.hook_q(x)``, placed in a module's forward pass
wherever the notes name an intermediate (the residual stream, Q, K, V, the scores, the
pattern A, ...). With nothing attached it returns its input and costs one attribute test. A
function attached with ``add_hook`` is called as ``fn(tensor, hook=point)``; when it returns a
tensor, that tensor replaces the intermediate for the rest of the pass (ablation, patching),
and when it returns None the pass goes on unchanged (reading, caching). A replacement must
have the shape of the tensor it replaces: anything else is refused with a ValueError naming
the point and both shapes (the check runs only when a hook is attached). The convention is
TransformerLens's, whose names glassformer's hook points follow.

Public names: ``hook_points(model)`` walks the module tree and names each point by its
attribute path. The modules carry TransformerLens's names (``embed``, ``pos_embed``,
``blocks``, ``attn``, ``ln1``, ``mlp``, ``ln_final``, ``unembed``), so a path reads as
TransformerLens's names do: ``blocks.0.attn.hook_pattern``, and the path of a hook point is
where to find it: ``model.blocks[0].attn.hook_pattern``.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

__all__ = ["HookFn", "HookPoint", "hook_points"]

HookFn = Callable[..., Tensor | None]  # fn(tensor, hook=HookPoint) -> replacement or None


class HookPoint(nn.Module):
    """The identity on one intermediate tensor, to which hooks can be attached."""

    def __init__(self) -> None:
        super().__init__()
        self.name: str | None = None  # the public name, set by hook_points()

    @property
    def active(self) -> bool:
        """Is a hook attached? Modules compute what only a hook reads (the attention pattern,
        each head's contribution) only when it is."""
        return bool(self._forward_hooks)

    def add_hook(self, fn: HookFn) -> RemovableHandle:
        """Call ``fn(tensor, hook=self)`` each time the point is passed; a tensor it returns
        replaces the intermediate. Returns a handle whose ``remove()`` detaches it."""

        def forward_hook(module: HookPoint, inputs: tuple, output: Tensor) -> Tensor | None:
            return _checked(fn(output, hook=module), output, module)

        return self.register_forward_hook(forward_hook)

    def __call__(self, x: Tensor) -> Tensor:
        if not self._forward_hooks:  # the common case: no module-call overhead
            return x
        return super().__call__(x)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return "" if self.name is None else repr(self.name)


def _checked(new: object, old: Tensor, point: HookPoint) -> Tensor | None:
    """A hook's answer: None (keep the tensor) or a tensor of the same shape."""
    if new is None:
        return None
    where = point.name or "a hook point"
    if not isinstance(new, Tensor):
        raise TypeError(
            f"the hook at {where} returned {type(new).__name__}: allowed a tensor of shape "
            f"{tuple(old.shape)} (a replacement) or None (keep the tensor)"
        )
    if new.shape != old.shape:
        raise ValueError(
            f"the hook at {where} returned a tensor of shape {tuple(new.shape)}: the point "
            f"holds {tuple(old.shape)}, and a replacement must have the same shape"
        )
    return new


def hook_points(module: nn.Module) -> dict[str, HookPoint]:
    """Every HookPoint under ``module`` by its public name, in the order the modules were
    built (``run_with_cache`` keeps the order of the pass); also sets each point's ``name``."""
    points = {name: m for name, m in module.named_modules() if isinstance(m, HookPoint)}
    for name, point in points.items():
        point.name = name
    return points

