"""Validation metrics for the four objectives (each task's ``metrics``, glassformer/tasks.py).

lm, mlm    loss (mean cross-entropy per scored token, nats) and perplexity e^loss
classify   loss and accuracy
seq2seq    loss (teacher forcing), and on greedily decoded outputs: exact match (the whole
           target, <EOS> included) and token accuracy (target positions decoded right)
"""

from __future__ import annotations

import math

import torch

from ..fast import fast_paths
from ..models import IGNORE_INDEX, GlassformerModel
from ..progress import Work
from ..tasks import get_task
from .batches import BatchStream
from .distributed import Cluster

__all__ = ["evaluate"]


@torch.no_grad()
def evaluate(
    model: GlassformerModel,
    task: str,
    stream: BatchStream,
    n_batches: int,
    device: torch.device,
    *,
    generate_examples: int = 0,
    cluster: Cluster | None = None,
    progress: str = "none",
) -> dict[str, float]:
    """Metrics over every example of the first ``n_batches`` validation batches (a smaller
    last batch included): the loss is the sum over scored tokens (examples for a classifier)
    divided by their number, not a mean of batch means. In a distributed run batch k is
    counted by process k % world_size; the last n % world_size batches are run by every
    process (so that all make the same number of forward passes, as FSDP needs) and counted
    by one; the sums are added up. ``progress`` ("bar", "lines", "none"; progress.py) shows
    the examples scored, then those decoded, on stderr (one process only)."""
    metric_names = get_task(task).metrics
    was_training = model.training
    model.eval()
    total_loss, total_count, correct, seen = 0.0, 0, 0, 0
    n = min(n_batches, len(stream))
    world = 1 if cluster is None else cluster.world_size
    shard = world > 1 and n >= world
    rank = cluster.rank if shard else 0
    shown = Work(progress if world == 1 else "none", _examples(stream, n), "scoring")
    for k in range(n):
        counted = not shard or k % world == rank
        if not counted and k < n - n % world:
            continue  # another process's batch
        batch = {key: v.to(device) for key, v in stream.batch(k).items()}
        with fast_paths(model):  # inference on padded batches: the CPU fast paths
            out = model(**batch)
        shown.update(batch["labels"].shape[0])
        if not counted:
            continue
        labels = batch["labels"]
        count = int(scored(labels, task).sum())
        total_loss += float(out.loss) * count  # out.loss is the mean over the batch's count
        total_count += count
        if "accuracy" in metric_names:
            correct += int((out.logits.argmax(-1) == labels).sum())
            seen += labels.numel()
    shown.close()
    if shard:
        total_loss, total_count, correct, seen = cluster.sum(
            [total_loss, total_count, correct, seen]
        )
    metrics: dict[str, float] = {"loss": total_loss / max(total_count, 1)}
    if "perplexity" in metric_names:
        metrics["perplexity"] = math.exp(min(metrics["loss"], 50.0))
    if "accuracy" in metric_names:
        metrics["accuracy"] = correct / max(seen, 1)
    if "exact_match" in metric_names and generate_examples:
        decoding = progress if world == 1 else "none"
        metrics.update(greedy_match(model, stream, generate_examples, device, decoding))
    model.train(was_training)
    return metrics


def scored(labels: torch.Tensor, task: str) -> torch.Tensor:
    """Which labels the loss scores (the next token's: labels[:, 1:])."""
    if get_task(task).loss == "next token":
        labels = labels[:, 1:]
    return labels != IGNORE_INDEX


def _examples(stream: BatchStream, n_batches: int) -> int:
    """How many examples the first ``n_batches`` batches hold (the last one may be smaller)."""
    return min(n_batches * stream.batch_size, len(stream.dataset))


def greedy_match(
    model, stream: BatchStream, n_examples: int, device, progress: str = "none"
) -> dict[str, float]:
    """Exact match and token accuracy of greedy decoding against the labels, over whole
    batches until ``n_examples`` are decoded."""
    from ..generation import generate

    n_batches = min(-(-n_examples // stream.batch_size), len(stream))
    shown = Work(progress, _examples(stream, n_batches), "greedy decoding")
    exact = tokens_right = tokens = examples = 0
    k = 0
    while examples < n_examples and k < len(stream):
        batch = stream.batch(k)
        k += 1
        labels = batch["labels"]  # (B, T): target + <EOS>, -100 at padding
        out = generate(
            model,
            batch["input_ids"].to(device),
            attention_mask=batch["attention_mask"].to(device),
            max_new_tokens=labels.shape[1],
            temperature=0.0,
        )
        pred = torch.full_like(labels, -1)  # (B, T): the greedy tokens, -1 past their end
        for i, seq in enumerate(out.tokens):
            pred[i, : len(seq)] = torch.tensor(seq[: labels.shape[1]], dtype=pred.dtype)
        real = labels != IGNORE_INDEX
        hit = (pred == labels) & real
        exact += int((hit.sum(1) == real.sum(1)).sum())
        tokens_right += int(hit.sum())
        tokens += int(real.sum())
        examples += labels.shape[0]
        shown.update(labels.shape[0])
    shown.close()
    return {
        "exact_match": exact / max(examples, 1),
        "token_accuracy": tokens_right / max(tokens, 1),
    }
