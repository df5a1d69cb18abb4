"""``python slow_save.py ARGS`` runs ``glassformer ARGS`` with each checkpoint write paused
half-way (after trainer.safetensors, before trainer.json and the rename into place), so a
kill test can land a SIGKILL inside a checkpoint write every time, not by luck. Nothing
else changes: the numbers trained are those of ``python -m glassformer``."""

import sys
import time

from glassformer.cli import main
from glassformer.training import state

_write = state.save_file


def _slow_write(*args, **kwargs):
    _write(*args, **kwargs)
    time.sleep(1.0)


state.save_file = _slow_write
sys.exit(main(sys.argv[1:]))
