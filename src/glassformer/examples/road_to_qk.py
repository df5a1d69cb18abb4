"""The road to queries and keys ("Formal Algorithms for Transformers", "Self-Attention across
the sequence"): the three attention scores trained on a task that needs a head to attend to
the previous token.

    "dot"       xᵀ x′            no query/key parameters
    "shared"    xᵀ Uᵀ U x′       one projection U for queries and keys
    "separate"  xᵀ U_qᵀ U_k x′   separate W^Q and W^K (what transformers use): q · k′

The built-in config ``road-to-qk`` (a one-layer, one-head decoder of width 32 with rotary
positions, 600 steps on
the ``interleaved`` data: "aqbrcsdt...", each symbol the successor of the one two places back)
is trained once per score with ``Run``; then each model reads the validation texts and
``measure`` reports:

* ``val_loss``: the run's validation loss, per token over every target (the first two symbols
  are random: at best 2 ln 26 / 17 = 0.383);
* ``accuracy``: greedy next-token accuracy on the targets the rule determines (x_2 onwards and
  <EOS>), 1.0 when the task is learned;
* ``previous`` / ``diagonal``: the fraction of attention rows whose largest weight is on the
  previous token / on the query's own position, over the rows that need the previous token
  (the queries x_1 … x_14, each predicting succ of the token before it);
* ``weight_previous`` / ``weight_self``: the mean weight on those two keys, over those rows;
* ``pattern``: the attention weights averaged over the validation texts (T, T).

    python -m glassformer.examples.road_to_qk [--out DIR] [--picture PNG]

The command line trains new runs only: an ``--out`` whose runs exist already (a finished or an
interrupted run of this example) is refused before anything is trained.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from ..cli.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted
from ..nn.qk_projections import ATTENTION_SCORES
from ..runs.claim import check_out, output_dir
from ..runs.errors import RunError, RunInterrupted
from ..runs.record import holds_run
from ..runs.run import Run
from ._command import ArgumentParser, command, picture_file

__all__ = ["CONFIG", "ScoresResult", "check_out_folder", "compare", "main", "measure"]
__all__ += ["plot_results", "train_scores"]

CONFIG = "road-to-qk"


@dataclass
class ScoresResult:
    """What one attention score reached (see the module docstring)."""

    scores: str
    val_loss: float
    accuracy: float
    previous: float
    diagonal: float
    weight_previous: float  # the mean weight on the previous token, over the same rows
    weight_self: float  # … on the query's own position
    pattern: Tensor  # (T, T)
    seconds: float


def train_scores(scores: str, out: str | Path, **settings) -> ScoresResult:
    """Train the ``road-to-qk`` config with ``model.attention_scores = scores`` into
    ``out``/``scores``; ``settings``: train-table overrides (steps, seed)."""
    start = time.perf_counter()
    run = Run.plan(
        CONFIG,
        settings={"model": {"attention_scores": scores}, "train": settings},
        out=Path(out) / scores,
    )
    metrics = run.train()
    seconds = time.perf_counter() - start
    texts = list(run.val_data.examples)
    return measure(run.model, run.tokenizer, texts, scores, metrics["val_loss"], seconds)


@torch.no_grad()
def measure(model, tokenizer, texts, scores: str, val_loss: float, seconds: float) -> ScoresResult:
    """Accuracy, previous-token and diagonal fractions and the mean pattern of ``model`` (a
    one-layer DecoderLM) on ``texts`` (interleaved examples of one length)."""
    ids = torch.tensor([tokenizer.encode(t, add_bos=True, add_eos=True) for t in texts])
    inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, T): <BOS> x_0 … x_15 -> x_0 … x_15 <EOS>
    seen: dict[str, Tensor] = {}
    hook = model.blocks[0].attn.hook_pattern
    handle = hook.add_hook(lambda a, hook: seen.setdefault("pattern", a))
    try:
        logits = model.eval()(inputs).logits
    finally:
        handle.remove()
    ruled = slice(2, None)  # x_2 onwards and <EOS>: what x_n = succ(x_{n-2}) determines
    right = logits.argmax(-1)[:, ruled] == targets[:, ruled]
    a = seen["pattern"]  # (B, H, T, T)
    rows = torch.arange(2, a.shape[-1] - 1)  # the queries x_1 … x_14, whose next symbol is
    best = a[..., rows, :].argmax(-1)  # succ(the previous token): (B, H, rows)
    return ScoresResult(
        scores,
        float(val_loss),
        right.float().mean().item(),
        (best == rows - 1).float().mean().item(),
        (best == rows).float().mean().item(),
        a[..., rows, rows - 1].mean().item(),
        a[..., rows, rows].mean().item(),
        a.mean(dim=(0, 1)),
        seconds,
    )


def compare(out: str | Path, **settings) -> dict[str, ScoresResult]:
    """Every attention score trained and measured: {scores: ScoresResult}."""
    return {s: train_scores(s, out, **settings) for s in ATTENTION_SCORES}


FORMULAS = {"separate": "xᵀ U_qᵀ U_k x′", "shared": "xᵀ Uᵀ U x′", "dot": "xᵀ x′"}


def plot_results(results: dict[str, ScoresResult], path: str | Path) -> Path:
    """The mean attention pattern of each score side by side, titled with its figures; a PNG
    at ``path`` (needs matplotlib)."""
    from ..inspect._draw import new_figure, save

    fig = new_figure((3.2 * len(results) + 0.6, 3.9), 100)
    fig.set_layout_engine("constrained")
    axes = fig.subplots(1, len(results), squeeze=False)[0]
    for ax, r in zip(axes, results.values(), strict=True):
        image = ax.imshow(r.pattern.numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(
            f"{r.scores}: {FORMULAS.get(r.scores, '')}\nval loss {r.val_loss:.3f}, accuracy "
            f"{r.accuracy:.0%}\nmost on previous {r.previous:.0%}, on itself {r.diagonal:.0%}",
            fontsize=9,
        )
        ax.set_xlabel("key position", fontsize=8)
        ax.set_ylabel("query position", fontsize=8)
        ticks = range(0, r.pattern.shape[-1], 4)
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.tick_params(labelsize=7)
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="mean attention weight")
    return save(fig, path, {}).path


def main(argv: list[str] | None = None) -> int:
    """The command line; its exit status: 2 and one line for a mistake, found before anything
    is trained (a folder that already holds these runs is refused), 130 on Ctrl-C
    (_command.py)."""
    return command(_main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(
        prog="python -m glassformer.examples.road_to_qk", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", default="runs/road-to-qk", help="folder for the three runs")
    parser.add_argument("--picture", help="draw the three patterns into this PNG")
    args = parser.parse_args(argv)
    out = Path(args.out)
    check_out_folder(out)
    if args.picture:
        picture_file(Path(args.picture), "--picture")
    try:
        results = compare(out)
    except RunInterrupted as stop:  # Ctrl-C or SIGTERM, after saving (runs/run.py)
        terminated = stop.signal == signal.SIGTERM
        raise Interrupted(
            f"{'terminated' if terminated else 'interrupted'}; the runs trained so far are kept "
            f"in {out}; to train again, remove that folder or choose another --out",
            EXIT_TERMINATED if terminated else EXIT_INTERRUPTED,
        ) from None
    if args.picture:
        print(plot_results(results, args.picture))
    for r in results.values():
        print(
            f"{r.scores:>8}: val loss {r.val_loss:.3f}, accuracy {r.accuracy:.3f}, previous "
            f"token {r.previous:.3f}, diagonal {r.diagonal:.3f} ({r.seconds:.1f} s)"
        )
    return 0


def check_out_folder(out: Path) -> None:
    """``RunError`` unless ``out`` can take the three runs: a folder this user may write, none
    of whose run folders (``out``/separate, shared, dot) holds a run already."""
    output_dir(out, "--out")
    for scores in ATTENTION_SCORES:
        check_out(out / scores)
        if holds_run(out / scores):
            raise RunError(
                f"--out {out}: {out / scores} already holds a run; the example trains new runs "
                f"only: choose another --out, or remove {out} to train again"
            )


if __name__ == "__main__":
    raise SystemExit(main())
