"""What makes a training run, usable from Python: ``Run.plan(...).train()``.

    run         Run: plan, resume, load, build, fit (what ``glassformer train`` does)
    settings    the settings tables ([run] [model] [train] [data] [sample]), TOML configs,
                ``section.key=value`` assignments, layering and checks
    plan        settings resolved into a RunPlan (task, data, tokenizer, preset, TrainConfig)
    datasets    the plan's data loaded and its tokenizer trained
    pretrained  a run started from a pre-trained model (init_from): its tokenizer, config, weights
    resume      a kept run's plan, checked against the settings given
    data_identity   the size and SHA-256 of the data, recorded and checked on resume
    claim       a run folder claimed: checked, locked, not over a kept run
    folder      load_model: the model of a checkpoint folder or a run folder
    record      run.json written and read
    fits        will the model's training fit the device
    scale       GLASSFORMER_TEST_SCALE, a test aid that shrinks a run
    evaldata    is a data file of a checkpoint's task

The checkpoints folder inside a run folder is the trainer's (training/layout.py). Errors are
``RunError``, a ``ValueError``.
"""

from .errors import RunError, RunInterrupted
from .folder import load_model, resolve_checkpoint
from .plan import RunPlan, make_plan
from .run import Run

__all__ = [
    "Run",
    "RunError",
    "RunInterrupted",
    "RunPlan",
    "load_model",
    "make_plan",
    "resolve_checkpoint",
]
