"""Reading JSON and TOML that came from elsewhere, with their nesting bounded.

A configuration, a tokenizer file, a run record or a request body is data from outside: a
document nested thousands of levels deep makes Python's parsers raise ``RecursionError`` (and
every later walk over it recurse as deep). ``loads_json`` and ``loads_toml`` refuse such a
document with a ``ValueError`` that names where it came from and the limit; nothing glassformer
writes is nested more than a few levels.
"""

from __future__ import annotations

import json
import sys
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["MAX_DEPTH", "NestingError", "check_depth", "loads_json", "loads_toml"]

MAX_DEPTH = 64  # lists and objects inside one another; glassformer's own files use at most 4


class NestingError(ValueError):
    """A document nested deeper than allowed (a ``ValueError``; its own class so that a caller
    that tries other readings of a text after a parse error can tell this one apart)."""


def loads_json(text: str | bytes, where: str) -> Any:
    """``json.loads(text)``, or ``ValueError`` naming ``where`` when ``text`` is not JSON or is
    nested deeper than ``MAX_DEPTH``."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise NestingError(_too_deep(where)) from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, an integer too long
        raise ValueError(f"{where} is not valid JSON ({_reason(err)})") from None
    check_depth(data, where)
    return data


def loads_toml(text: str, where: str) -> dict[str, Any]:
    """``tomllib.loads(text)``, or ``ValueError`` naming ``where`` when ``text`` is not TOML or
    is nested deeper than ``MAX_DEPTH``."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise NestingError(_too_deep(where)) from None
    except ValueError as err:  # TOMLDecodeError, an integer too long
        raise ValueError(f"{where} is not valid TOML ({_reason(err)})") from None
    check_depth(data, where)
    return data


def check_depth(data: Any, where: str, limit: int = MAX_DEPTH) -> None:
    """``NestingError`` when lists and dicts in ``data`` nest deeper than ``limit`` (walked
    without recursion, so any depth is measured safely)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise NestingError(_too_deep(where, limit))
        stack.extend((child, depth + 1) for child in children)


def _reason(err: ValueError) -> str:
    """The parser's message, Python's limit on integer digits said without its advice to the
    programmer (``sys.set_int_max_str_digits``)."""
    if "integer string conversion" in str(err):
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(err)


def _too_deep(where: str, limit: int = MAX_DEPTH) -> str:
    return f"{where} nests lists or objects too deeply: allowed at most {limit} levels"
