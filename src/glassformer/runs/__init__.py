"""What makes a training run, usable from Python: ``Run.plan(...).train()``.

    run         Run: plan, resume, load, build, fit, evaluate (what ``glassformer train``
                and ``eval`` do)
    loading     what Run.load() reads: the data, the tokenizer, the model config
    summary     Run.summary(): what a built run is, as data
    settings    the settings tables ([run] [model] [train] [data] [sample]), TOML configs,
                ``section.key=value`` assignments, layering and checks
    plan        settings resolved into a RunPlan (task, data, tokenizer, preset, TrainConfig)
    datasets    the plan's data loaded and its tokenizer trained
    pretrained  a run started from a pre-trained model (init_from): its tokenizer and config
    start_weights   the pre-trained weights copied into the run's model, and what was copied
    model_folders   a Hugging Face model folder read (init_from, --checkpoint)
    resume      a kept run's plan, checked against the settings given
    data_identity   the size and SHA-256 of the data, recorded and checked on resume
    claim       a run folder claimed: checked, locked, not over a kept run
    folder      load_model: the model of a checkpoint folder or a run folder
    record      run.json written and read
    fits        will the model's training fit the device
    scale       scale=F, a test aid that shrinks a run
    evaluation  a checkpoint's metrics on a dataset (Run.evaluate, glassformer eval)
    evaldata    is a data file of a checkpoint's task
    curves      loss.png and the TensorBoard logs from metrics.jsonl

The checkpoints folder inside a run folder is the trainer's (training/layout.py). Errors are
``RunError``, a ``ValueError``, whose messages name Python arguments and settings, never a
command-line flag (``argument`` and ``names`` say which: glassformer/named.py); notes on a run
that goes on are ``RunNote`` warnings.

The names below are the package's surface, the one the command line (glassformer.cli) uses.
"""

from .claim import differences, output_dir, output_file
from .datasets import DEFAULT_OVERFLOW
from .errors import RunError, RunInterrupted, RunNote
from .evaluation import evaluate_model
from .fits import ADVICE_NAMES, memory_advice
from .folder import RUN_FILE, load_model, resolve_checkpoint
from .model_folders import is_huggingface_dir, read_huggingface
from .plan import RUN_OPTIONS, TRAIN_OPTIONS, VAL_FRACTION, RunPlan, make_plan, option_tables
from .record import holds_run, write_json
from .run import Run
from .settings import (
    DERIVED,
    SECTIONS,
    builtin_config_path,
    load_config,
    merge,
    parse_assignment,
    to_toml,
    toml_value,
)

__all__ = [
    "ADVICE_NAMES",
    "DEFAULT_OVERFLOW",
    "DERIVED",
    "RUN_FILE",
    "RUN_OPTIONS",
    "SECTIONS",
    "TRAIN_OPTIONS",
    "VAL_FRACTION",
    "Run",
    "RunError",
    "RunInterrupted",
    "RunNote",
    "RunPlan",
    "builtin_config_path",
    "differences",
    "evaluate_model",
    "holds_run",
    "is_huggingface_dir",
    "load_config",
    "load_model",
    "make_plan",
    "memory_advice",
    "merge",
    "option_tables",
    "output_dir",
    "output_file",
    "parse_assignment",
    "read_huggingface",
    "resolve_checkpoint",
    "to_toml",
    "toml_value",
    "write_json",
]
