"""How the command line fails: one line on stderr, a fixed exit status, never a traceback.

2    a user mistake (bad option or value, unknown name, missing or corrupt file, a run
     directory in the wrong state): ``UsageError``, or a ``ValueError`` / missing-file
     error raised by the library, whose messages name the argument and what is allowed
     (said with the flags that give them: hints.py)
1    the run itself failed: ``TrainingError``, a loss that is not finite, or a disk that
     filled up while a checkpoint was written (``DiskFullError``: the message names the
     checkpoints folder, the space the checkpoint needs and the space free; the checkpoints
     before it are intact and ``--resume`` continues from the newest); any other write that
     finds the disk full (ENOSPC, EDQUOT) is one line too, naming the file
130  interrupted (Ctrl-C, SIGINT)
143  terminated (SIGTERM, e.g. ``kill PID`` or a job scheduler stopping the run), which
     ``train`` handles as Ctrl-C: it finishes its step, saves, and says how to continue
141  the reader of stdout went away (``glassformer generate ... | head -c 20``): the command
     stops quietly, as a Unix tool stopped by SIGPIPE does (a shell reports 128 + 13 for it);
     stdout is then pointed at /dev/null so that the interpreter's last flush cannot fail
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from .hints import with_flags

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_RUN_FAILED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "ArgumentParser",
    "Interrupted",
    "UsageError",
    "exit_status",
    "guarded",
    "say_error",
]

EXIT_RUN_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 2, 130, 141
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process SIGTERM ended
USER_ERRORS = (
    ValueError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
)
NO_SPACE = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


class UsageError(Exception):
    """A mistake the user can fix; the message is shown as it is."""


class Interrupted(Exception):
    """Training stopped on Ctrl-C (``status`` 130) or SIGTERM (143) after saving; the message
    says how to continue."""

    def __init__(self, message: str, status: int = EXIT_INTERRUPTED) -> None:
        super().__init__(message)
        self.status = status


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a bad option is one ``UsageError`` line instead of usage + error."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def say_error(message: str) -> None:
    """Print ``glassformer: error: <message>`` as one line on stderr."""
    line = " ".join(str(message).split()) or "unknown error"
    print(f"glassformer: error: {line}", file=sys.stderr)


def guarded(command: Callable[[], int]) -> int:
    """Run ``command``; turn the errors a user can meet into one line and an exit status."""
    try:
        code = command()
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except (Exception, KeyboardInterrupt) as err:
        return exit_status(err)


def exit_status(err: BaseException) -> int:
    """The exit status of a command that raised ``err``, after one line saying what went
    wrong; ``err`` is raised again when it is not an error a user can meet (a bug)."""
    if isinstance(err, BrokenPipeError):
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    if isinstance(err, UsageError):
        say_error(str(err))
        return EXIT_USAGE
    from ..training.errors import TrainingError  # here: refusing an option loads no PyTorch

    if isinstance(err, TrainingError):
        say_error(with_flags(err))
        return EXIT_RUN_FAILED
    if isinstance(err, Interrupted):
        print(f"glassformer: {err}", file=sys.stderr)
        return err.status
    if isinstance(err, KeyboardInterrupt):
        print("glassformer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(err, USER_ERRORS):
        say_error(with_flags(err) if isinstance(err, ValueError) else _describe(err))
        return EXIT_USAGE
    if isinstance(err, OSError) and err.errno in NO_SPACE:
        say_error(f"{_describe(err)}; free some space and try again")
        return EXIT_RUN_FAILED
    raise err


def _silence_stdout() -> None:
    """Point stdout's file descriptor at /dev/null: what is still buffered for the closed pipe
    is dropped at exit instead of raising again (the recipe of Python's ``signal`` docs)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a StringIO): nothing will be flushed to a pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _describe(err: Exception) -> str:
    """An OSError's message with its file name; other errors as they are."""
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or err}"
    return str(err)
