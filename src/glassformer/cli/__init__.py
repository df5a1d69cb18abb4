"""The ``glassformer`` command: ``train``, ``eval``, ``generate``, ``predict``, ``inspect``,
``trace``, ``explore``, ``config``.

    glassformer train                     the built-in demo: a character-level Shakespeare GPT
    glassformer train --data reverse      any task on built-in data or your files
    glassformer eval --checkpoint DIR     metrics of a checkpoint, printed and as JSON
    glassformer generate --checkpoint DIR --prompt TEXT
    glassformer predict --checkpoint DIR --text TEXT
    glassformer inspect --checkpoint DIR --text TEXT --out DIR     attention maps and more, as PNG
    glassformer trace --checkpoint DIR --text TEXT                 the forward pass, step by step
    glassformer explore --checkpoint DIR   a local web page to look inside the model
    glassformer config                    every setting of train: type, default, allowed values

Each subcommand's options live in a light module (train_args, evaluate_args, generate_args,
predict_args, inspect_args, explore_args, config_args), the code that runs it in its own module
(train, evaluate, generate, predict, inspect_cmd, explore_cmd, config_cmd), imported only when
the command runs: ``--help`` and the refusal of a bad option answer without loading PyTorch,
and ``glassformer --version`` answers before the parser is built.
errors.py says how the command fails (one line on stderr; exit status 2 for user mistakes).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command, built from light modules (``*_args.py``): ``--help`` and
    the refusal of a bad option load no PyTorch; a command's module is imported when it runs."""
    from . import (
        config_args,
        evaluate_args,
        explore_args,
        generate_args,
        inspect_args,
        predict_args,
        train_args,
    )
    from .errors import ArgumentParser

    parser = ArgumentParser(
        prog="glassformer",
        description="Train, evaluate and run transformers built from their formulas.",
        epilog="`glassformer COMMAND --help` describes each command's options.",
    )
    parser.add_argument("--version", action="version", version=f"glassformer {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for module in (
        train_args,
        evaluate_args,
        generate_args,
        predict_args,
        inspect_args,
        explore_args,
        config_args,
    ):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: sys.argv[1:]); returns the exit status. Run as
    the ``glassformer`` command (``argv`` None), ``train`` and ``eval`` give PyTorch a thread
    per core that other work leaves free (threads.py)."""
    if asks_version(sys.argv[1:] if argv is None else argv):
        print(f"glassformer {__version__}")
        return 0
    from .errors import UsageError, exit_status

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError(
                "choose a command: train, eval, generate, predict, inspect, trace, explore, config "
                "(see --help)"
            )
        args.free_cores = argv is None  # a command, not a Python caller: threads.py
        code = args.handler.load()(args)  # the command's module, imported now
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except (Exception, KeyboardInterrupt) as err:  # one line and an exit status (errors.py)
        return exit_status(err)


def asks_version(argv: Sequence[str]) -> bool:
    """Does the command line start with ``--version`` (or an abbreviation the parser accepts,
    such as ``--vers``), which the parser answers before anything else? Any other command line
    is left to the parser, which also answers ``--version`` found later."""
    first = str(argv[0]) if len(argv) else ""
    return first.startswith("--v") and "--version".startswith(first)
