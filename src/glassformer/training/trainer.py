"""The training loop for DTraining (lm), ETraining (mlm), EDTraining (seq2seq) (Algorithms 13,
12, 11 of Phuong & Hutter, "Formal Algorithms for Transformers" (2022)) and classification:
minimise the cross-entropy of the model's predictions with the optimizer ``config.optimizer``
names (AdamW by default; optim.py).

One optimizer step = ``grad_accum`` micro-batches (forward, backward), gradient clipping,
the optimizer's update, the learning-rate schedule. Every ``eval_every`` steps the validation
metrics are computed; every ``save_every`` steps (and at the end) a checkpoint is written.
Batches are a function of (seed, step), and checkpoints hold the optimizer, scheduler and RNG
states, so a resumed run continues exactly as an uninterrupted one. Under ``torchrun`` each
process trains on its share of every batch (see distributed.py); only the first process logs
and writes.
Ctrl-C (SIGINT) or SIGTERM finishes the current step, saves and returns; a training or
validation loss, gradient norm or weights that are not finite stop the run with
``DivergedError`` (a ``TrainingError``, divergence.py) before the step is saved, so the last
good checkpoint stays the newest; weights that are not finite before the first step are refused
(``ValueError``). A number that is not finite is written ``null`` in metrics.jsonl.
What trains (fixed embeddings, ``train.freeze``) is set before the optimizer is built
(trainable.py); LoRA's adapters are the model's own, added where it is built (``Run.build``,
``glassformer.finetune.add_lora``). ``trainer.trained`` and ``trainer.total`` count the
parameters.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from ..data import TextDataset
from ..models import GlassformerModel
from ..progress import Progress, progress_mode
from ..tasks import get_task
from ..tokenizers import Tokenizer
from .batches import BatchStream
from .config import TrainConfig
from .distributed import Cluster, wrap_model
from .divergence import DivergedError, diverged, non_finite_parameter
from .errors import TrainingError
from .evaluate import evaluate
from .lock import RunLock, holding_run_dir
from .memory import reuse_freed_memory
from .metrics_log import MetricsLog
from .optim import build_optimizer, build_scheduler
from .runtime import resolve_device, truncate_metrics, warn_if_slow_bf16
from .signals import stop_requests
from .state import (
    latest_checkpoint,
    load_checkpoint,
    prune,
    remove_partial_checkpoints,
    save_checkpoint,
)
from .step import accumulate_gradients
from .trainable import set_what_trains

__all__ = ["Trainer", "TrainingError"]


class Trainer:
    """Train ``model`` on ``train`` (a TextDataset) for ``config.task``.

    ``fit()`` runs the loop (the module docstring describes a step); ``train_step()``,
    ``evaluate()``, ``save()`` and ``resume()`` are its parts. The model moves to the device
    ``config.device`` names; what trains (fixed embeddings, ``config.freeze``) is set here,
    before the optimizer is built. A model for ``config.lora_rank > 0`` comes with its LoRA
    layers (``glassformer.finetune.add_lora``; ``Run.build`` adds them).

    Args:
        model: the model to train; its family must suit the task (lm: decoder, mlm and
            classify: encoder (classify also a DecoderClassifier), seq2seq: encoder-decoder).
        tokenizer: the tokenizer of the data, attached to the model and saved with it.
        train: the training examples.
        validation: the validation examples, or None (no evaluation).
        config: the training settings (`TrainConfig`).
        run_dir: the folder for checkpoints and ``metrics.jsonl``; None: nothing is written.
        progress: True (or "bar") a progress bar, "lines" one line every ``log_every``
            steps and per evaluation (for a log file), False (or "none") nothing.
        on_log: called with every metrics record (also written to ``run_dir/metrics.jsonl``),
            e.g. to forward it to TensorBoard.

    Raises:
        ValueError: a model of a family the task cannot train, a device that is not
            available, a batch that does not split over the processes of ``torchrun``, a
            model without the LoRA layers ``config.lora_rank`` asks for.
    """

    def __init__(
        self,
        model: GlassformerModel,
        tokenizer: Tokenizer,
        train: TextDataset,
        validation: TextDataset | None,
        config: TrainConfig,
        run_dir: str | Path | None = None,
        *,
        progress: bool | str = True,
        on_log: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        families = get_task(config.task).families
        if model.family not in families:
            raise ValueError(
                f"task {config.task!r} needs a model of the {' or '.join(families)} family, got a "
                f"{type(model).__name__} ({model.family})"
            )
        self.config, self.tokenizer = config, tokenizer
        self.run_dir = None if run_dir is None else Path(run_dir)
        self.device = resolve_device(config.device)
        self.cluster = Cluster.from_env(self.device.type)
        self.device = self.cluster.device(self.device)
        if config.reuse_memory and self.device.type == "cpu":
            reuse_freed_memory()  # large blocks are not mapped and zero-filled every step
        self.cluster.check_batch(config.batch_size)
        self.progress = progress_mode(progress) if self.cluster.is_main else "none"
        self.metrics = MetricsLog(self.run_dir, on_log, self.cluster.is_main)
        torch.manual_seed(config.seed)
        self.model = model.to(self.device)
        self.model.tokenizer = tokenizer
        # fixed embeddings, train.freeze: before the optimizer, which takes what trains
        self.trained, self.total = set_what_trains(model, config)
        if config.checkpointing:
            model.enable_checkpointing()
        wrapped = wrap_model(model, config.strategy, self.cluster, self.device)
        self.ddp = wrapped is not model
        self.forward = torch.compile(wrapped) if config.compile else wrapped
        self.train_stream = self._stream(train, shuffle=True)
        self.cluster.check_batch(config.batch_size, self.train_stream.batch_size)
        self.val_stream = None if validation is None else self._stream(validation, shuffle=False)
        self.optimizer = build_optimizer(model, config)
        self.scheduler = build_scheduler(self.optimizer, config)
        self.step = 0
        self.best: dict[str, Any] | None = None  # {"step", "loss"} of the best validation loss
        self.interrupted = False  # set when Ctrl-C / SIGTERM ended the last fit() early
        self.stop_signal: int | None = None  # which: signal.SIGINT or signal.SIGTERM
        self._shown = Progress("none", config.steps, 0)  # what fit() shows while it runs

    def _stream(self, data: TextDataset, shuffle: bool) -> BatchStream:
        # training (shuffled): full batches only; validation: every example, the last batch
        # smaller
        return BatchStream.for_task(
            data,
            self.tokenizer,
            self.config.task,
            max_len=self.window(),
            batch_size=self.config.batch_size,
            seed=self.config.seed,
            shuffle=shuffle,
            drop_last=shuffle,
            mlm_probability=self.config.mlm_probability,
            decoder_start_id=self.model.config.decoder_start_id,  # seq2seq only (BART: </s>)
            progress=self.progress,
        )

    def window(self) -> int:
        """The longest sequence trained on: the model's max_len, or for lm and mlm the
        shorter ``train.context`` when set."""
        max_len, context = self.model.config.max_len, self.config.context
        if context is None or get_task(self.config.task).data != "lm":
            return max_len
        return min(context, max_len)

    # The loop -----------------------------------------------------------------------------------
    def fit(self, *, resume: bool = False, lock: RunLock | None = None) -> dict[str, Any]:
        """Train until ``config.steps``; returns the last metrics. ``resume`` continues from
        the newest checkpoint in ``run_dir``. The first process holds ``run_dir/.lock`` while
        it runs (see lock.py): a second run into the same folder is refused. ``lock``: that
        lock, taken already by the caller (who releases it), e.g. to write files of its own
        into the run folder before and after training.

        Raises:
            ValueError: the model's weights are not finite before training (``resume``: the
                checkpoint's are checked when read).
            DivergedError: a loss, gradient norm or the weights stopped being finite (the
                message says at which step and what to try); nothing of that step is saved.
        """
        if not resume:
            self._check_start()
        c, last = self.config, {}
        with self._run_lock(resume, lock), self._divergence_logged():
            self.interrupted, self.stop_signal = False, None
            self._shown = Progress(self.progress, c.steps, self.step)
            window = {"tokens": 0, "since": time.perf_counter()}  # the steps since the last log
            with stop_requests(self._stop), contextlib.closing(self._shown):
                while self.step < c.steps and not self.interrupted:
                    loss, tokens = self.train_step()
                    self.step += 1
                    last = self._after_step(loss, tokens, window)
            if stop := self.interrupted:
                self._log({"step": self.step, "event": "interrupted"})
            elif self.val_stream is not None and (not c.eval_every or self.step % c.eval_every):
                last.update(self._evaluate())
            if self.run_dir is not None and (not c.save_every or self.step % c.save_every or stop):
                self.save()
        return last

    @contextlib.contextmanager
    def _divergence_logged(self) -> Iterator[None]:
        """A run that diverges ends its metrics.jsonl with ``{"step": N, "event": "diverged"}``."""
        try:
            yield
        except DivergedError as err:
            self._log({"step": err.step, "event": "diverged"})
            raise

    def _after_step(self, loss: float, tokens: int, window: dict[str, Any]) -> dict[str, Any]:
        """Show and log the step, evaluate and save when due; the step's metrics (``window``:
        tokens and start time of the steps since the last log)."""
        c = self.config
        window["tokens"] += tokens
        rate = round(window["tokens"] / max(time.perf_counter() - window["since"], 1e-9), 1)
        last = {"step": self.step, "loss": loss, "lr": self.scheduler.get_last_lr()[0]}
        log = self.step % c.log_every == 0 or self.step == c.steps
        self._shown.step(self.step, loss, last["lr"], rate, log)
        if log:
            self._log({**last, "tokens_per_s": rate})
        if self.val_stream is not None and c.eval_every and self.step % c.eval_every == 0:
            last.update(self._evaluate())
        if c.save_every and self.step % c.save_every == 0:
            self.save()
        if log:  # the next rate counts training steps only, not evaluation or saving
            window["tokens"], window["since"] = 0, time.perf_counter()
        return last

    @contextlib.contextmanager
    def _run_lock(self, resume: bool, lock: RunLock | None):
        """Inside: ``run_dir`` exists, the first process holds its lock (``holding_run_dir``)
        and the run is resumed or its metrics.jsonl started."""
        if self.cluster.is_main:
            warn_if_slow_bf16(self.device, self.config.bf16)
        main_dir = self.run_dir if self.cluster.is_main else None
        with holding_run_dir(main_dir, lock, resume, self.cluster.raise_together):
            if resume:
                self.resume()
            else:
                self.metrics.start()
            yield

    def train_step(self) -> tuple[float, int]:
        """One optimizer step; returns (mean loss over the micro-batches, real tokens seen)."""
        c, model = self.config, self.model
        model.train()
        loss, tokens = accumulate_gradients(
            self.forward, self.train_stream, self.step, c, self.cluster, self.device, self.ddp
        )
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip or math.inf))
        if not (math.isfinite(loss) and math.isfinite(norm)):
            self.optimizer.zero_grad(set_to_none=True)
            what = (
                f"the training loss is {loss}"
                if not math.isfinite(loss)
                else f"the gradient norm is {norm} (the training loss {loss:.6g})"
            )
            raise diverged(self.step + 1, what, c, self.run_dir)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss, tokens

    def evaluate(self) -> dict[str, float]:
        if self.val_stream is None:
            raise ValueError("no validation data was given")
        c = self.config
        return evaluate(
            self.model,
            c.task,
            self.val_stream,
            c.eval_batches,
            self.device,
            generate_examples=c.eval_generate,
            cluster=self.cluster,
        )

    def _evaluate(self) -> dict[str, Any]:
        metrics = {f"val_{k}": v for k, v in self.evaluate().items()}
        self._log({"step": self.step, **metrics})
        if not math.isfinite(metrics["val_loss"]):  # never a best loss, never saved
            what = f"the validation loss is {metrics['val_loss']} after the step's update"
            raise diverged(self.step, what, self.config, self.run_dir)
        self._shown.evaluation(self.step, {k[4:]: v for k, v in metrics.items()})
        if self.best is None or metrics["val_loss"] < self.best["loss"]:
            self.best = {"step": self.step, "loss": metrics["val_loss"]}
        return metrics

    # Checkpoints ----------------------------------------------------------------------------
    def save(self) -> Path:
        if self.run_dir is None:
            raise ValueError("this Trainer has no run_dir to save into")
        name = non_finite_parameter(self.model)
        if self.cluster.sum([float(name is not None)])[0]:  # never a checkpoint of NaN weights
            what = f"the step's update left NaN or infinite values in {name or 'the weights'}"
            raise diverged(self.step, what, self.config, self.run_dir)
        state = {"best": self.best, "train_config": self.config.to_dict()}
        main = self.cluster.is_main  # every process gathers, the first one writes
        path = save_checkpoint(
            self.run_dir,
            self.step,
            self.model,
            self.optimizer,
            self.scheduler,
            state,
            self.tokenizer,
            write=main,
        )
        if main:
            prune(self.run_dir, self.config.keep_last, {self.best["step"]} if self.best else set())
        self.cluster.barrier()
        return path

    def resume(self) -> None:
        path = None if self.run_dir is None else latest_checkpoint(self.run_dir)
        if path is None:
            raise ValueError(f"nothing to resume: no checkpoint in {self.run_dir}")
        meta = load_checkpoint(path, self.model, self.optimizer, self.scheduler)
        self.step, self.best = meta["step"], meta.get("best")
        if self.cluster.is_main:
            remove_partial_checkpoints(self.run_dir)
            truncate_metrics(self.run_dir / "metrics.jsonl", self.step)
            # a smaller keep_last (after a full disk) makes room before the next checkpoint
            prune(self.run_dir, self.config.keep_last, {self.best["step"]} if self.best else set())

    # Helpers -------------------------------------------------------------------------------------
    def _log(self, record: dict[str, Any]) -> None:
        self.metrics.write(record)

    def _check_start(self) -> None:
        """Refuse weights that are not finite before training: no learning rate trains from
        them (each process checks its shard)."""
        name = non_finite_parameter(self.model)
        if self.cluster.sum([float(name is not None)])[0]:
            where = f"parameter {name!r}" if name else "in another process's shard"
            raise ValueError(
                f"the model's weights hold NaN or infinite values before step {self.step + 1} "
                f"({where}); training cannot start from them, whatever the learning rate: "
                "start from weights that are finite"
            )

    def _stop(self, signum: int) -> None:
        """Ctrl-C or SIGTERM came (signals.py): finish this step, save, return."""
        self.interrupted, self.stop_signal = True, signum
