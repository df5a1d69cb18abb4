"""A training run as a Python object: what ``glassformer train`` does, step by step.

    run = Run.plan(data="shakespeare", out="runs/py", steps=200)   # a new run
    run = Run.plan(config="shakespeare-char", out="runs/demo")      # a built-in or TOML config
    metrics = run.train()                 # the final metrics, as metrics.jsonl's last record
    run = Run.resume("runs/py", steps=400)
    run.train()                           # continues from the newest checkpoint

``train()`` is ``load()`` (the data, checked against run.json's record when resuming; the
tokenizer; the model config, checked to fit the device), ``build()`` (the model and its
Trainer) and ``fit()`` (the folder locked, run.json written, the steps trained and saved, the
loss curve loss.png and the TensorBoard logs written from metrics.jsonl, each when its
optional package is installed: ``run.loss_plot``, ``run.tensorboard``); the command line calls
the three itself to print between them. Mistakes are ``RunError``
(a ``ValueError``) naming what is wrong; Ctrl-C or SIGTERM ends ``fit()`` with ``RunInterrupted``
after saving.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..models.config import ModelConfig
from ..named import naming
from ..training import Trainer, lr_at, resolve_device
from ..training.layout import latest_checkpoint
from ..training.lock import RunLock
from ..training.trainable import add_run_lora
from .claim import check_out, refuse_kept_run, take_lock
from .curves import write_loss_plot, write_tensorboard
from .errors import RunError, RunInterrupted, RunNote
from .evaluation import evaluate_model
from .folder import load_model, resolve_checkpoint
from .loading import load_inputs
from .plan import RUN_OPTIONS, TRAIN_OPTIONS, RunPlan, make_plan, option_tables
from .pretrained import StartReport
from .record import checkpoint_step, write_run
from .resume import check_reached, resumed_plan
from .settings import Settings, check_settings, load_config, merge
from .summary import run_summary

__all__ = ["Run"]


class Run:
    """A run's plan, and once loaded and built its data, tokenizer, model and Trainer.

    Make one with `Run.plan` (a new run) or `Run.resume` (a kept run), then ``train()``; the
    run folder is what ``glassformer train`` writes (run.json, checkpoints, metrics.jsonl).

    Args:
        plan: the checked plan of the run.
        model_config: the model's configuration (a resumed run's own).
        checkpoint: the checkpoint a resumed run continues from.
        resumed: the run continues a kept one.
        data_changed_ok: a resumed run may read data other than those it was trained on.

    Examples:
        ```python
        run = Run.plan(data="shakespeare", out="runs/py", steps=200)
        metrics = run.train()
        run = Run.resume("runs/py", steps=400)
        run.train()
        ```
    """

    def __init__(
        self,
        plan: RunPlan,
        model_config: ModelConfig | None = None,
        checkpoint: Path | None = None,
        *,
        resumed: bool = False,
        data_changed_ok: bool = False,
    ) -> None:
        """Use `Run.plan` or `Run.resume`, which check the plan and the folder first."""
        self.plan, self.model_config, self.checkpoint = plan, model_config, checkpoint
        self.resumed, self.data_changed_ok = resumed, data_changed_ok
        self.train_data = self.val_data = self.tokenizer = self.architecture = None
        self.model = self.trainer = None
        self.pretrained = None  # runs/pretrained.py: the model a new run starts from
        self.start: StartReport | None = None  # what build() took from it
        self.loss_plot: Path | None = None  # <out>/loss.png once fit() wrote it
        self.tensorboard: Path | None = None  # <out>/tensorboard once fit() wrote it

    # Making a run --------------------------------------------------------------------------
    @classmethod
    def plan(
        cls,
        config: str | Path | None = None,
        *,
        settings: Settings | None = None,
        out: str | Path | None = None,
        **options: Any,
    ) -> Run:
        """A new run: the settings layered as the command line layers them.

        Args:
            config: a built-in config name or a TOML file, the bottom layer.
            settings: tables over it, such as ``{"model": {"n_layer": 2}}``.
            out: the run folder (None: runs/<data>[-<task>]-<tokenizer>).
            **options: the top layer, as ``glassformer train``'s options: task, data,
                val_data, tokenizer, vocab_size, model (a preset), init_from (a pre-trained
                model's folder, instead of model and tokenizer), steps, seed, device,
                strategy.

        Returns:
            The run, planned: nothing is loaded or written before ``train()``.

        Raises:
            RunError: a setting is wrong (naming it and what is allowed), or ``out`` already
                holds a run.
        """
        unknown = sorted(set(options) - set(RUN_OPTIONS) - set(TRAIN_OPTIONS))
        if unknown:
            raise RunError(
                f"Run.plan got {', '.join(unknown)}; allowed: config, settings, out, "
                f"{', '.join(RUN_OPTIONS[:-1] + TRAIN_OPTIONS)}"
            )
        if isinstance(options.get("init_from"), os.PathLike):
            options["init_from"] = os.fspath(options["init_from"])
        flags = option_tables({**options, "out": None if out is None else str(out)})
        _check_tables({} if settings is None else settings)
        check_settings(flags)
        base = load_config(str(config)) if config is not None else {}
        return cls.from_settings(merge(base, settings or {}, flags))

    @classmethod
    def from_settings(cls, settings: Settings, *, scale: float | None = None) -> Run:
        """A new run from checked, layered settings (``glassformer train`` gathers them from
        its options); ``scale``: a test aid that shrinks the run's counts (scale.py)."""
        plan = make_plan(settings, scale=scale)
        check_out(plan.out)
        refuse_kept_run(plan)
        return cls(plan)

    @classmethod
    def resume(
        cls,
        out: str | Path,
        *,
        steps: int | None = None,
        device: str | None = None,
        strategy: str | None = None,
        settings: Settings | None = None,
        data_changed_ok: bool = False,
    ) -> Run:
        """The run kept in ``out``, to continue from its newest checkpoint.

        Args:
            out: the run folder.
            steps: the total steps to reach (more than the run's extends it).
            device: where to continue ("auto", "cpu", "cuda", "mps").
            strategy: "ddp" or "fsdp" under torchrun.
            settings: tables that must not change the run (only its [sample] and
                train.keep_last may).
            data_changed_ok: continue on data other than those it was trained on.

        Raises:
            RunError: ``out`` holds no run or no checkpoint, or the settings change it.
        """
        if settings is not None:
            _check_tables(settings)
        return cls.resume_with(
            Path(out),
            None if settings is None else (lambda own: merge(own, settings)),
            {"steps": steps, "device": device, "strategy": strategy},
            data_changed_ok=data_changed_ok,
        )

    @classmethod
    def resume_with(
        cls, out: Path, given, changes: dict[str, Any], *, data_changed_ok=False, scale=None
    ) -> Run:
        """``resume`` with ``given(run's settings) -> settings`` to check (resume.py);
        ``scale`` as ``from_settings`` takes it."""
        check_out(out)
        plan, config = resumed_plan(out, given, changes, scale)
        ckpt = latest_checkpoint(plan.out)
        if ckpt is not None:
            check_reached(plan, checkpoint_step(ckpt))
        return cls(plan, config, ckpt, resumed=True, data_changed_ok=data_changed_ok)

    @property
    def step(self) -> int:
        """The step of the checkpoint the run continues from (0 for a new run)."""
        return 0 if self.checkpoint is None else checkpoint_step(self.checkpoint)

    @property
    def done(self) -> bool:
        """Has the run reached its steps already (a resumed run with nothing to train)?"""
        return self.checkpoint is not None and self.step >= self.plan.train.steps

    # Training ------------------------------------------------------------------------------
    def train(self, progress: bool | str = False) -> dict[str, Any]:
        """Load, build and fit.

        Args:
            progress: as `Trainer` takes it (False, "lines" or "bar").

        Returns:
            The final metrics: step, loss, lr, and val_* when the run validates.

        Raises:
            RunError: the run has already reached its steps, or what it loads is wrong.
            RunInterrupted: Ctrl-C or SIGTERM ended the run, after saving.
        """
        if self.done:
            raise RunError(
                f"{self.plan.out} has already reached step {self.step}; resume it with more "
                "steps to train on"
            )
        self.load(progress)
        self.build(progress)
        return self.fit()

    def load(self, progress: bool | str = False) -> None:
        """The data, the tokenizer (trained, read from the cache, or the checkpoint's) and the
        model config, checked to fit the device before anything is allocated; ``progress``
        (False, "lines" or "bar", as `Trainer` takes it) shows the tokenizer's training (under
        torchrun, in the first process only)."""
        inputs = load_inputs(
            self.plan,
            self.model_config,
            self.checkpoint,
            resumed=self.resumed,
            data_changed_ok=self.data_changed_ok,
            progress=progress,
        )
        self.train_data, self.val_data = inputs.train_data, inputs.val_data
        self.tokenizer, self.model_config = inputs.tokenizer, inputs.model_config
        self.architecture, self.pretrained = inputs.architecture, inputs.pretrained

    def build(self, progress: bool | str = False) -> Trainer:
        """The model (seeded by train.seed; the pre-trained weights of init_from copied in;
        LoRA's adapters added when train.lora_rank > 0) and its Trainer; after ``load()``."""
        if self.architecture is None:
            raise RunError(
                "Run.build() comes after run.load(), which reads the data, the "
                "tokenizer and the model config (run.train() calls all three)"
            )
        torch.manual_seed(self.plan.train.seed)
        self.model = self.architecture(self.model_config)
        if self.pretrained is not None:
            self.start = self.pretrained.copy_into(self.model)
            self.pretrained = None  # the pre-trained model's memory is freed
        add_run_lora(self.model, self.plan.train)
        data = (self.train_data, self.val_data)
        self.trainer = Trainer(
            self.model, self.tokenizer, *data, self.plan.train, self.plan.out, progress=progress
        )
        return self.trainer

    def summary(self) -> dict[str, Any]:
        """What the built run is, as data (summary.py): task, data, tokenizer, model,
        parameters, context, device, steps; after ``build()``."""
        if self.trainer is None:
            raise RunError("Run.summary() comes after run.load() and run.build()")
        return run_summary(self)

    # Evaluating ----------------------------------------------------------------------------
    def evaluate(
        self, data: str | None = None, *, split: str = "validation", **options: Any
    ) -> dict[str, Any]:
        """The metrics of the run's best checkpoint (else its newest), as ``glassformer eval
        --checkpoint RUN`` computes them.

        Args:
            data: a built-in dataset or a file; None: the run's own validation data (or its
                training data with ``split="train"``).
            split: "validation" or "train".
            **options: as `evaluate_model` takes them: data_options, batch_size, limit,
                batches, seed, progress, scale.

        Returns:
            The report: checkpoint, task, data, split, examples, examples_in_split and
            metrics (name -> value).

        Raises:
            RunError: the run has no checkpoint yet, or the data are not of its task.
        """
        folder = resolve_checkpoint(self.plan.out)
        model = load_model(folder).to(resolve_device(self.plan.train.device))
        return evaluate_model(model, folder, data, split=split, **options)

    # Training, continued ---------------------------------------------------------------------
    def fit(self, then: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Lock the folder, write run.json, train to the plan's steps; the final metrics.
        Then loss.png and the TensorBoard logs (``loss_plot``, ``tensorboard``: None where
        matplotlib or tensorboard is not installed); ``then(metrics)`` runs before the lock is
        released (the command line prints there). Under torchrun only the first process (RANK 0)
        writes. The lock is released however fit() ends."""
        plan, trainer = self.plan, self.trainer
        if trainer is None:
            raise RunError(
                "Run.fit() comes after run.load() and run.build(), which make the "
                "model and its Trainer (run.train() calls all three)"
            )
        main = int(os.environ.get("RANK", "0")) == 0
        lock = RunLock(plan.out)  # taken before anything is written, held until the last file
        try:
            error = None
            if main:
                try:
                    take_lock(lock, plan, new=not self.resumed)
                except ValueError as err:
                    error = err
            trainer.cluster.raise_together(error)
            if main:
                write_run(plan, self.model_config)
                _note_warmup(plan.train)
            last = trainer.fit(resume=self.checkpoint is not None, lock=lock if main else None)
            if trainer.interrupted:
                raise RunInterrupted(
                    f"stopped at step {trainer.step}; saved in {plan.out}; continue with "
                    f"Run.resume({str(plan.out)!r})",
                    trainer.stop_signal,
                )
            if main:  # the curves of metrics.jsonl
                self.loss_plot = write_loss_plot(plan.out)
                self.tensorboard = write_tensorboard(plan.out)
            if then is not None:
                then(last)
        finally:
            lock.release()
        return last


def _check_tables(settings: Any) -> None:
    """``settings`` as tables, ``{"model": {"n_layer": 2}, ...}``, checked (settings.py)."""
    if not isinstance(settings, dict) or not all(isinstance(t, dict) for t in settings.values()):
        raise RunError(
            f"settings={settings!r}: allowed a dict of tables, e.g. "
            '{"model": {"n_layer": 2}, "train": {"lr": 1e-3}}'
        )
    check_settings(settings)


def _note_warmup(train) -> None:
    """A warmup longer than the run: the learning rate never reaches train.lr (optim.py)."""
    if train.warmup > train.steps:
        peak = lr_at(train.steps - 1, train)
        note = RunNote(
            f"train.warmup = {train.warmup} is longer than the run's {train.steps} steps: the "
            f"learning rate only rises, to {peak:.3g} at the last step, and never reaches "
            f"train.lr = {train.lr:g} (train.warmup=N with N <= {train.steps} reaches it)"
        )
        warnings.warn(naming(note, names=["train.warmup"]), stacklevel=3)
