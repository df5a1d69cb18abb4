"""The options of ``glassformer config`` (config_cmd.py runs it)."""

from __future__ import annotations

import argparse

from ..names import SETTINGS_TABLES
from ..preset_shapes import SHAPES
from .options import handler

__all__ = ["add_parser"]

DESCRIPTION = """\
Every key of the settings tables of `glassformer train`: in a TOML file (--config FILE.toml)
or one at a time (--set SECTION.KEY=VALUE, VALUE read as TOML: 64, 1e-3, true, "text").
Later layers win: the config file, then --set, then the flags. With none of --config, --task,
--data, --val-data, --tokenizer, --vocab-size and --model, `glassformer train` starts from
the built-in config shakespeare-char instead of these defaults."""


def add_parser(commands) -> None:
    p = commands.add_parser(
        "config",
        help="list every setting of train (--set SECTION.KEY=VALUE) with its type, default "
        "and allowed values",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("section", nargs="?", choices=SETTINGS_TABLES, help="only this table")
    p.add_argument(
        "--model",
        metavar="PRESET",
        choices=sorted(SHAPES),
        default="tiny",
        help="show the [model] defaults of this preset (default: tiny)",
    )
    p.set_defaults(handler=handler("config_cmd"))
