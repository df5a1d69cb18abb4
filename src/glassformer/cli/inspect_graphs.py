"""The GNN view in ``glassformer inspect`` (Formal Algorithms for Transformers, "Transformers as
GNNs"): each stack's attention graph per layer, its learned attention drawn as a weighted graph,
and the receptive field of one position through the layers; an encoder-decoder's
cross-attention graph too (and, with --cross, its learned cross-attention as a graph)."""

from __future__ import annotations

from pathlib import Path

from ..inspect import graph_plots as plots
from ..inspect.graph_view import attention_graphs

__all__ = ["draw_graphs", "receptive_positions"]


def receptive_positions(tokens: dict[str, list[str]], real: int, position: int | None):
    """{stack: the position whose receptive field is drawn}: ``position`` (checked against each
    stack's length), else the last real token of the input (``real`` tokens in the first stack,
    the one --pad-to pads) and the last position of any other stack."""
    found = {}
    for k, (stack, labels) in enumerate(tokens.items()):
        if position is not None and position >= len(labels):
            raise ValueError(
                f"--position {position} is out of range for the {stack}'s {len(labels)} "
                f"positions: allowed 0..{len(labels) - 1}"
            )
        default = real - 1 if k == 0 else len(labels) - 1
        found[stack] = default if position is None else position
    return found


def draw_graphs(
    rec, model, tokens, layers, heads, cross: bool, out: Path, threshold: float, positions
) -> dict[str, str]:
    """Write the graph pictures into ``out``; {file name: what it shows}."""
    files: dict[str, str] = {}
    shown = "mean over heads" if heads is None else "mean of heads " + ", ".join(map(str, heads))
    learned = dict(layers=layers, heads=heads, threshold=threshold, tokens=tokens)
    for stack in rec.stacks:
        graphs, labels, p = attention_graphs(model, stack), tokens[stack], positions[stack]
        name = f"graph_{stack}.png"
        plots.plot_graph(graphs, out / name, t=len(labels), tokens=labels)
        files[name] = f"{stack} self-attention graph of each layer ({_specs(graphs)}): j → i"
        name = f"attention_graph_{stack}.png"
        plots.plot_attention_graph(rec, out / name, stack=stack, **learned)
        files[name] = f"{stack} learned self-attention as a graph ({shown}), A_ij > {threshold:g}"
        name = f"receptive_field_{stack}.png"
        plots.plot_receptive_field(graphs, out / name, t=len(labels), position=p, tokens=labels)
        files[name] = f"{stack}: the inputs position {p} can depend on after each layer"
    if "cross" in {r.kind for r in rec.attention}:
        graphs = attention_graphs(model, "decoder", "cross")
        target, source = tokens["decoder"], tokens["encoder"]  # queries, keys
        name = "graph_cross.png"
        plots.plot_graph(
            graphs, out / name, t=len(target), s=len(source), cross=True, tokens=target,
            key_tokens=source,
        )  # fmt: skip
        files[name] = f"cross-attention graph of each layer ({_specs(graphs)}): source j → target i"
    if cross:
        name = "attention_graph_cross.png"
        plots.plot_attention_graph(rec, out / name, kind="cross", stack="decoder", **learned)
        files[name] = f"learned cross-attention as a graph ({shown}), A_ij > {threshold:g}"
    return files


def _specs(graphs) -> str:
    return ", ".join(dict.fromkeys(plots.spec_text(g) for g in graphs))
