"""A transformer encoder as a GNN on a real graph: Zachary's karate club.

Formal Algorithms for Transformers, "Transformers as GNNs": attention is message passing, a
transformer is a GNN on the complete graph, and restricting attention to a graph's edges makes
it a GNN on that graph. Zachary's karate club (networkx's ``karate_club_graph``, which ships with
networkx) has 34 members and 78 friendships; the club split in two, and each member's faction
(the node attribute 'club') is the label. Semi-supervised node classification: a few members
per faction are labelled (the two leaders, 0 and 33, and others drawn by the seed), the rest
are predicted.

The model is the same in both arms: each member's one-hot id -> Linear -> ``glassformer.nn.
Encoder`` (no positional encoding) -> Linear -> 2 classes, trained on the labelled members only.

  * graph: attention along the friendships plus self-loops, ``from_networkx(G) | self_loops()``;
  * full: every member attends every member (the complete graph).

The ids tell the members apart but say nothing about who is friends with whom; only the graph
does. Full attention sees no structure, so what it learns from 6 labels says nothing about the
other 28 (chance, 0.5); attention restricted to the friendships spreads the labels along them.

    python -m glassformer.examples.karate [--seeds 5] [--steps 100] [--pictures DIR]
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import Tensor, nn

from ..graphs import AttentionGraph, from_networkx, self_loops
from ..nn import Encoder
from ._command import ArgumentParser, command, picture_folder

__all__ = ["NodeClassifier", "compare", "karate_club", "main", "split", "train_and_test"]

ARMS = {"graph": "graph edges + self-loops", "full": "full (every member)"}


def karate_club() -> tuple[object, Tensor]:
    """(the networkx graph, labels (34,): 0 for Mr. Hi's faction, 1 for the Officer's)."""
    import networkx

    g = networkx.karate_club_graph()
    labels = [0 if g.nodes[i]["club"] == "Mr. Hi" else 1 for i in range(g.number_of_nodes())]
    return g, torch.tensor(labels)


def split(labels: Tensor, per_class: int = 3, seed: int = 0) -> tuple[Tensor, Tensor]:
    """(labelled members, the others): the two leaders (0 and 33) and ``per_class`` - 1 more
    members of each faction drawn by ``seed``."""
    if not isinstance(per_class, int) or per_class < 1:
        raise ValueError(f"per_class must be an int >= 1, got {per_class!r}")
    gen = torch.Generator().manual_seed(seed)
    chosen = [0, 33]
    for faction, leader in ((0, 0), (1, 33)):
        others = [i for i in range(len(labels)) if labels[i] == faction and i != leader]
        chosen += [others[k] for k in torch.randperm(len(others), generator=gen)[: per_class - 1]]
    train = torch.tensor(sorted(chosen))
    test = torch.tensor([i for i in range(len(labels)) if i not in set(chosen)])
    return train, test


class NodeClassifier(nn.Module):
    """Node features (N, F) -> Linear -> Encoder on ``graph`` (None: full attention) ->
    Linear -> class logits (N, n_class); the N nodes are the positions of one sequence."""

    def __init__(
        self,
        n_features: int,
        graph: AttentionGraph | None,
        *,
        n_layer: int = 3,
        d_model: int = 16,
        n_head: int = 2,
        n_class: int = 2,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(n_features, d_model)
        self.encoder = Encoder(n_layer, d_model, n_head, 2 * d_model, graphs=graph, norm_first=True)
        self.head = nn.Linear(d_model, n_class)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.encoder(self.embed(x)[None]))[0]  # (N, n_class)


def train_and_test(
    graph: AttentionGraph | None, seed: int = 0, *, steps: int = 100, per_class: int = 3
) -> tuple[float, NodeClassifier]:
    """Train on the labelled members (full batch, Adam) and return (the accuracy on the
    others, the model in eval mode)."""
    _, labels = karate_club()
    train, test = split(labels, per_class, seed)
    x = torch.eye(len(labels))  # one-hot ids: no structure in the features
    torch.manual_seed(seed)
    model = NodeClassifier(x.shape[1], graph)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(x)[train], labels[train])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x)[test].argmax(-1) == labels[test]).float().mean().item()
    return accuracy, model


def compare(seeds: Iterable[int] = range(5), *, steps: int = 100, per_class: int = 3):
    """{"graph": accuracies, "full": accuracies}, one per seed, the same seeds for both."""
    g, _ = karate_club()
    arms = {"graph": from_networkx(g) | self_loops(), "full": None}
    return {
        name: [train_and_test(graph, s, steps=steps, per_class=per_class)[0] for s in seeds]
        for name, graph in arms.items()
    }


def main(argv: list[str] | None = None) -> int:
    """The command line; its exit status: 2 and one line for a mistake, found before anything
    is trained, 130 on Ctrl-C (_command.py)."""
    return command(_main, argv)


def _main(argv: list[str] | None) -> int:
    p = ArgumentParser(
        prog="python -m glassformer.examples.karate", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    p.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    p.add_argument("--per-class", type=int, default=3, help="labelled members per faction")
    p.add_argument("--pictures", type=Path, metavar="DIR", help="draw seed 0's graph model")
    args = p.parse_args(argv)
    if min(args.seeds, args.steps, args.per_class) < 1 or args.per_class > 16:
        p.error(  # a faction has 17 members: 16 labelled leave one to predict
            f"--seeds and --steps must be >= 1 and --per-class from 1 to 16, got "
            f"{args.seeds}, {args.steps} and {args.per_class}"
        )
    if args.pictures is not None:
        picture_folder(args.pictures, "--pictures")
    torch.set_num_threads(1)  # a 34-token model: threads only wait for each other
    results = compare(range(args.seeds), steps=args.steps, per_class=args.per_class)
    g, labels = karate_club()
    known = 2 * args.per_class
    print(
        f"Zachary's karate club: {g.number_of_nodes()} members, {g.number_of_edges()} "
        f"friendships, 2 factions; {known} labelled, {len(labels) - known} to predict; "
        f"{args.steps} steps; seeds 0..{args.seeds - 1}"
    )
    print(f"{'attention':<26} test accuracy (mean ± std)")
    for name, accs in results.items():
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        print(f"{ARMS[name]:<26} {statistics.mean(accs):.3f} ± {std:.3f}")
    if args.pictures is not None:
        for path in _pictures(args.pictures, args.steps, args.per_class):
            print(f"wrote {path}")
    return 0


def _pictures(out: Path, steps: int, per_class: int) -> list[Path]:
    """The club's graph, and the trained graph model's last-layer attention as a graph."""
    from ..inspect import capture, plot_attention_graph, plot_graph

    g, labels = karate_club()
    graph = from_networkx(g) | self_loops()
    _, model = train_and_test(graph, 0, steps=steps, per_class=per_class)
    names = [f"{i}{'ab'[int(c)]}" for i, c in enumerate(labels)]  # id + faction (a: Mr. Hi)
    with torch.no_grad(), capture(model) as rec:
        model(torch.eye(len(labels)))
    last = len(model.encoder.blocks) - 1
    return [
        plot_graph(graph, out / "karate_graph.png", t=len(labels), tokens=names).path,
        plot_attention_graph(rec, out / "karate_attention.png", layers=[last], tokens=names).path,
    ]


if __name__ == "__main__":
    raise SystemExit(main())
