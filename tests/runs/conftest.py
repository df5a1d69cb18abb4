"""The helpers and fixtures of tests/cli/conftest.py, for the tests of ``glassformer.runs``
that drive a run through ``glassformer train`` (``cli``, ``lm_files``, ``lm_run``, ...)."""

from ..cli.conftest import (  # noqa: F401 (fixtures, found by name)
    CLI,
    TINY,
    Result,
    _one_thread,
    assert_user_error,
    cli,
    lm_files,
    lm_run,
    metrics,
    one_thread,
    run_cli,
    train_losses,
)
