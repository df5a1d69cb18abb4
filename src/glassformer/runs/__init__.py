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
    record      run.json written and read; a checkpoint of a run found and loaded
    fits        will the model's training fit the device
    scale       GLASSFORMER_TEST_SCALE, a test aid that shrinks a run
    evaldata    is a data file of a checkpoint's task

The folder's layout (the checkpoints folder) is glassformer/run_layout.py's, which the trainer
and the model loader read too. Errors are ``RunError``, a ``ValueError``.
"""

from .errors import RunError, RunInterrupted
from .plan import RunPlan, make_plan
from .run import Run

__all__ = ["Run", "RunError", "RunInterrupted", "RunPlan", "make_plan"]
