"""From settings to a run plan: which task, data, tokenizer, model preset and TrainConfig.

The plan is what run.json records (with the final ModelConfig), so ``--resume`` rebuilds
exactly the same run. Defaults fill what the settings leave open:

    task        the dataset's own task (a .txt file: lm, a .csv file: classify)
    model       the task's preset: tiny (lm), tiny-encoder (mlm, classify), tiny-seq2seq
                (seq2seq); see glassformer/tasks.py
    validation  the built-in dataset's "validation" split; for a user file, a part of it held
                out (data.val_fraction = 0.1: the last 10% of a text, or 10% of the
                records spread evenly; see data/user_files.py), recorded in run.json so that
                --resume and ``glassformer eval`` read the same part
    out         the config's run.out (each built-in config NAME: runs/NAME), else
                runs/<data>-<tokenizer> (lm) or runs/<data>-<task>-<tokenizer>

``train`` adds the size and hash of the data it loaded (data_identity.py), which ``--resume``
checks. With ``scale=F`` (a test aid, scale.py) the plan's counts are scaled down.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data import list_datasets
from ..data.formats import guess_kind
from ..models.config import ModelConfig
from ..models.presets import PRESETS
from ..tasks import TASKS, task_for_data
from ..training import TrainConfig
from .errors import RunError
from .pretrained import check_init_path, fine_tune_defaults
from .scale import check_scale, scaled_run
from .settings import RunSettings, SampleSettings, Settings, merge

__all__ = ["RUN_OPTIONS", "TRAIN_OPTIONS", "RunPlan", "make_plan", "option_tables"]

VAL_FRACTION = 0.1  # of a user file held out for validation when no --val-data is given
BPE_VOCAB = 512
# what a run is given by name: glassformer train's flags, Run.plan's keywords
RUN_OPTIONS = (
    "task", "data", "val_data", "tokenizer", "vocab_size", "model", "init_from", "out"
)
TRAIN_OPTIONS = ("steps", "seed", "device", "strategy")


@dataclass
class RunPlan:
    """Everything needed to rebuild a run, except the sizes the tokenizer decides."""

    task: str
    data: str  # a built-in name or an absolute path
    validation: str | None  # a built-in name (its validation split), a path, or None
    data_options: dict[str, Any]
    tokenizer: str
    tokenizer_options: dict[str, Any]
    preset: str
    model_overrides: dict[str, Any]
    train: TrainConfig
    sample: SampleSettings
    out: Path
    settings: Settings = field(default_factory=dict)
    # the size and SHA-256 of the training and validation data (data_identity.py); None
    # until train has loaded them, and in a run.json written before they were recorded
    data_identity: dict[str, Any] | None = None
    # the pre-trained model the run started from (an absolute path; pretrained.py), or None
    init_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d.update(train=self.train.to_dict(), sample=dataclasses.asdict(self.sample))
        d["out"] = str(self.out)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunPlan:
        d = dict(d)
        train = d["train"]
        d.update(train=TrainConfig.from_dict(train), sample=SampleSettings(**d["sample"]))
        d["out"] = Path(d["out"])
        if not isinstance(d.get("data_identity"), dict | None):
            raise ValueError("data_identity is not a JSON object")
        return cls(**d)


def option_tables(options: dict[str, Any]) -> Settings:
    """The options named in RUN_OPTIONS and TRAIN_OPTIONS as the [run] and [train] tables,
    the last layer of the settings; None values left out."""
    given = {k: v for k, v in options.items() if v is not None}
    return {
        "run": {k: v for k, v in given.items() if k in RUN_OPTIONS},
        "train": {k: v for k, v in given.items() if k in TRAIN_OPTIONS},
    }


def is_builtin(name: str) -> bool:
    return name in {info.name for info in list_datasets()}


def make_plan(settings: Settings, *, scale: float | None = None) -> RunPlan:
    """Resolve ``settings`` (already checked) into a plan; errors are RunErrors. ``scale``:
    a factor F in (0, 1] that shrinks the run's counts, a test aid (scale.py)."""
    run = RunSettings(**settings.get("run", {}))
    data_options = dict(settings.get("data", {}))
    task = run.task or _task_of(run.data, data_options)
    data = run.data if is_builtin(run.data) else _path(run.data, "data")
    if run.val_data is None and is_builtin(run.data):
        validation = run.data
    elif run.val_data is None:  # a part of the file, held out (data/user_files.py)
        held_out = data_options.setdefault("val_fraction", VAL_FRACTION)
        validation = data if held_out else None
    elif data_options.get("val_fraction"):
        raise RunError(
            f"data.val_fraction={data_options['val_fraction']} holds out part of run.data for "
            f"validation, but run.val_data={run.val_data} is given; use one of them",
            names=["run.data", "run.val_data"],
        )
    elif run.val_data.lower() == "none":
        validation = None
    else:
        validation = _path(run.val_data, "val_data")
    init_from = None
    if run.init_from is not None:
        init_from = check_init_path(run.init_from)
        settings = _start_from(settings, init_from, task)
        preset_name = "pretrained"
    else:
        preset_name = run.model or TASKS[task].preset
        _check_preset(preset_name, task)
    train = _train_config(settings.get("train", {}), task)
    if init_from is None:
        _check_lora_rank(train, preset_name, settings.get("model", {}))
    paths = {"data": data} if data != run.data else {}
    if init_from is not None:
        paths["init_from"] = init_from
    if validation is not None and run.val_data is not None:
        paths["val_data"] = validation
    settings = merge(settings, {"run": paths})  # files as absolute paths
    sample = SampleSettings(**settings.get("sample", {}))
    if scale is not None:  # a test aid
        factor = check_scale(scale)
        data_options, train, sample = scaled_run(data, data_options, train, sample, factor)
    return RunPlan(
        task=task,
        data=data,
        validation=validation,
        data_options=data_options,
        tokenizer="pretrained" if init_from else run.tokenizer,
        tokenizer_options={} if init_from else _tokenizer_options(run.tokenizer, run.vocab_size),
        preset=preset_name,
        model_overrides=dict(settings.get("model", {})),
        train=train,
        sample=sample,
        out=Path(run.out) if run.out else default_out(run.data, task, _tokens(run, init_from)),
        settings=settings,
        init_from=init_from,
    )


def model_config(plan: RunPlan, vocab_size: int, labels: tuple[str, ...] = ()) -> ModelConfig:
    """The preset with the plan's overrides, sized to the tokenizer (and the labels)."""
    base = PRESETS[plan.preset].to_dict()
    sized: dict[str, Any] = {"vocab_size": vocab_size, "tgt_vocab_size": None}
    if labels:
        sized.update(n_classes=len(labels), extra={**base["extra"], "labels": list(labels)})
    try:
        return ModelConfig.from_dict({**base, **plan.model_overrides, **sized})
    except (TypeError, ValueError) as err:
        raise RunError(f"model settings: {err}") from None


def default_out(data: str, task: str, tokenizer: str) -> Path:
    stem = data if is_builtin(data) else Path(data).stem
    name = f"{stem}-{tokenizer}" if task == "lm" else f"{stem}-{task}-{tokenizer}"
    return Path("runs") / name


def _tokens(run: RunSettings, init_from: str | None) -> str:
    """The tokenizer's part of the default run folder: its kind, or the pre-trained model's
    folder name."""
    return run.tokenizer if init_from is None else Path(init_from).name


def _task_of(data: str, options: dict[str, Any]) -> str:
    """The task of the data's kind of examples: a built-in dataset's, or a file's by its
    suffix or its fields (data/formats/: the [data] options name other fields; any other
    suffix: plain text)."""
    for info in list_datasets():
        if info.name == data:
            return task_for_data(info.task).name
    path = Path(data).expanduser()
    if not path.exists():
        _path(data, "data")  # refused, naming what is allowed
    roles = ("text", "label", "source", "target")
    kind = guess_kind(path, {role: options.get(f"{role}_field") for role in roles})
    if kind is None and path.suffix.lower() != ".tsv" and not path.name.endswith(".tsv.gz"):
        kind = "lm"
    if kind is None:
        raise RunError(
            f"data {data}: a .tsv file holds seq2seq pairs or labelled texts; "
            "say which with run.task=seq2seq or run.task=classify",
            argument="data",
            names=["run.task"],
        )
    return task_for_data(kind).name


def _path(name: str, argument: str) -> str:
    path = Path(name).expanduser()
    if not path.is_file() and not path.is_dir():
        names = ", ".join(info.name for info in list_datasets())
        raise RunError(
            f"{argument} {name}: the file does not exist; allowed a built-in dataset ({names}), "
            "a .txt, .tsv, .csv, .jsonl or .parquet file (or one gzipped, .gz), a folder of "
            ".txt files or a datasets folder",
            argument=argument,
        )
    return str(path.resolve())


def _start_from(settings: Settings, path: str, task: str) -> Settings:
    """The settings of a run started from the pre-trained model at ``path``: no model,
    tokenizer or vocab_size (the weights and their tokenizer decide), and the
    fine-tuning defaults (pretrained.py) under the [train] settings given."""
    given = settings.get("run", {})
    for key in ("model", "tokenizer", "vocab_size"):
        if given.get(key) is not None:
            raise RunError(
                f"run.{key}={given[key]} and run.init_from={path} both say what to train: the "
                f"pre-trained model brings its architecture and its tokenizer; leave run.{key} "
                "out",
                names=[f"run.{key}", "run.init_from"],
            )
    train = settings.get("train", {})
    steps = _train_config(train, task).steps
    defaults = {k: v for k, v in fine_tune_defaults(task, steps).items() if k not in train}
    return merge({"train": defaults}, settings)


def _check_preset(name: str, task: str) -> None:
    if name not in PRESETS:
        raise RunError(
            f"model {name}: no such preset; choose one of {sorted(PRESETS)}", argument="model"
        )
    family, need = PRESETS[name].family, TASKS[task].family
    if family != need:
        fits = sorted(n for n, c in PRESETS.items() if c.family == need)
        raise RunError(
            f"model {name} is a preset of the {family} family but run.task={task} needs the "
            f"{need} family; choose one of {fits}",
            argument="model",
            names=["run.task"],
        )


def _check_lora_rank(train: TrainConfig, preset: str, overrides: dict[str, Any]) -> None:
    """A LoRA rank above the width d_model, refused before any data is read: every Linear of
    a model reads or writes d_model numbers, so B A has rank at most d_model (lora.py checks
    each target's own limit once the model is built)."""
    width = {**PRESETS[preset].to_dict(), **overrides}.get("d_model")
    if isinstance(width, int) and train.lora_rank > width:
        raise RunError(
            f"train.lora_rank={train.lora_rank} is larger than the model's width "
            f"model.d_model={width}: each Linear LoRA adapts reads or writes {width} numbers, "
            f"so its update B A has rank at most {width}; allowed: train.lora_rank from 1 to "
            f"{width}"
        )


def _train_config(table: dict[str, Any], task: str) -> TrainConfig:
    try:
        return TrainConfig.from_dict({**table, "task": task})
    except (TypeError, ValueError) as err:
        raise RunError(f"train settings: {err}") from None


def _tokenizer_options(kind: str, vocab_size: int | None) -> dict[str, Any]:
    if kind == "char":
        if vocab_size is not None:
            raise RunError(
                "vocab_size applies to the bpe and word tokenizers; a char tokenizer keeps "
                "every character of the training data",
                argument="vocab_size",
            )
        return {}
    if kind == "word":
        return {} if vocab_size is None else {"max_vocab": vocab_size}
    return {"vocab_size": BPE_VOCAB if vocab_size is None else vocab_size}
