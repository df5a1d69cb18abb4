"""After a run: the loss curve as <run>/loss.png (matplotlib) and TensorBoard event files
in <run>/tensorboard/ (when ``tensorboard`` is installed), both read from metrics.jsonl.

Both are optional extras: ``pip install 'glassformer[plot]'`` / ``'glassformer[tensorboard]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..safe_write import replace_dir, replace_file
from ..structured import loads_json

__all__ = ["read_metrics", "write_loss_plot", "write_tensorboard"]


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """The records of <run_dir>/metrics.jsonl (unreadable lines skipped)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = loads_json(line, f"{path} line")
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records.append(record)
    return records


def curves(records: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """(step, value) series: "train" (loss) and "validation" (val_loss)."""
    out: dict[str, list[tuple[int, float]]] = {"train": [], "validation": []}
    for r in records:
        if isinstance(r.get("loss"), int | float):
            out["train"].append((r["step"], float(r["loss"])))
        if isinstance(r.get("val_loss"), int | float):
            out["validation"].append((r["step"], float(r["val_loss"])))
    return out


def write_loss_plot(run_dir: Path) -> Path | None:
    """Write <run_dir>/loss.png; None when matplotlib is not installed."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    series = curves(read_metrics(run_dir))
    fig = Figure(figsize=(7, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, style in (("train", "-"), ("validation", "o-")):
        if series[name]:
            steps, values = zip(*series[name], strict=True)
            ax.plot(steps, values, style, label=name, markersize=4)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title(run_dir.name)
    ax.grid(alpha=0.3)
    if any(series.values()):
        ax.legend()
    fig.tight_layout()
    return replace_file(run_dir / "loss.png", lambda tmp: fig.savefig(tmp, format="png"))


def write_tensorboard(run_dir: Path) -> Path | None:
    """Write every metric of metrics.jsonl as TensorBoard scalars (train/*, val/*) into
    <run_dir>/tensorboard/, replacing that folder; None without tensorboard. The event file
    is written into a new hidden folder, then renamed into place, so no link is followed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    records = read_metrics(run_dir)
    return replace_dir(
        run_dir / "tensorboard",
        lambda tmp: _write_scalars(SummaryWriter(log_dir=str(tmp)), records),
    )


def _write_scalars(writer, records: list[dict[str, Any]]) -> None:
    """Every number in ``records`` as a scalar: val/<key> for val_<key>, else train/<key>."""
    try:
        for r in records:
            for key, value in r.items():
                if key == "step" or isinstance(value, bool) or not isinstance(value, int | float):
                    continue
                tag = f"val/{key[4:]}" if key.startswith("val_") else f"train/{key}"
                writer.add_scalar(tag, value, r["step"])
    finally:
        writer.close()
