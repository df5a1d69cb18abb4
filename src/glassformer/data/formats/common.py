"""What the readers of formats/ share: the fields each task reads, and how a value that is not a
text is named in a message."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "EXTRA",
    "MIN_ROWS_CHECKED",
    "ROLES",
    "describe",
    "field_names",
    "label_of",
    "need",
    "text_of",
]

# the fields of a record each kind of data reads, in the order of its examples
ROLES: dict[str, tuple[str, ...]] = {
    "lm": ("text",),
    "seq2seq": ("source", "target"),
    "classification": ("label", "text"),
}
EXTRA = "pip install 'glassformer[data]'"
MIN_ROWS_CHECKED = 10  # the label-column check applies from this many rows


def field_names(task: str, fields: dict[str, str | None]) -> dict[str, str]:
    """{role: the field's name} for ``task``: the name a setting gives (``fields["text"]`` from
    ``text_field``), else the role's own; a setting for a field the task does not read is
    refused."""
    for role, name in fields.items():
        if name is not None and role not in ROLES[task]:
            readers = [k for k, roles in ROLES.items() if role in roles]
            raise ValueError(
                f"{role}_field is {name!r}: allowed only for {' and '.join(readers)} data "
                f"(task {task!r} reads the fields {', '.join(ROLES[task])})"
            )
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"{role}_field is {name!r}: allowed the name of a field, e.g. 'text'")
    return {role: fields.get(role) or role for role in ROLES[task]}


def describe(value: object) -> str:
    """How a value that is not a text is named: ``a number (5)``, ``null``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"of type {type(value).__name__}"


def text_of(value: object, role: str, name: str, where: str) -> str:
    """``value`` when it is a string, else a ``ValueError`` naming the record."""
    if isinstance(value, str):
        return value
    raise ValueError(f"{where}: the {role} field {name!r} is {describe(value)}: allowed a string")


def label_of(value: object, name: str, where: str) -> str:
    """A label: a string, or an integer (read as its digits), without surrounding spaces."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    raise ValueError(
        f"{where}: the label field {name!r} is {describe(value)}: allowed a string or an integer"
    )


def need(module: str, what: Path | str):
    """Import the optional library ``module`` (pyarrow, datasets), or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ValueError(
            f"{str(what)!r}: reading it needs the {module.split('.')[0]} library: {EXTRA}"
        ) from None
