"""``glassformer config``: every setting of ``glassformer train`` (a key of --config FILE.toml
or --set SECTION.KEY=VALUE) with its type, default, allowed values and a note.

Nothing here is a copy: the keys are the fields of the classes in settings.SECTIONS, the
allowed values are their ``CHOICES`` and ``RANGES`` (what their checks use, see limits.py),
the [data] keys are the options of the dataset loaders, and the notes are the first
paragraphs of the fields' docstrings (or the comments on their lines) in the source.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Any

from ..data.examples import OVERFLOW
from ..data.registry import dataset_options
from ..data.synthetic import DEFAULT_SIZES
from ..models.presets import PRESETS
from ..runs import DEFAULT_OVERFLOW, DERIVED, SECTIONS, VAL_FRACTION, toml_value

__all__ = ["Key", "data_keys", "run", "section_keys"]

HEADINGS = {
    "run": "what to train on, and where",
    "model": "the model: fields of ModelConfig applied over the preset (--model)",
    "train": "the optimisation: fields of TrainConfig",
    "data": "options of the dataset, checked by the dataset that receives them",
    "sample": "the sample printed after a language-model run",
}


@dataclass(frozen=True)
class Key:
    """One setting: its name, type, default, allowed values (a tuple of choices, a Range, or
    None) and its note in the source."""

    name: str
    type: str
    default: Any
    allowed: Any = None
    note: str = ""


def run(args: argparse.Namespace) -> int:
    sections = [args.section] if args.section else list(SECTIONS)
    print("key, type, default, allowed values and note of each setting of glassformer train\n")
    print("\n\n".join(_render(s, args.model) for s in sections))
    return 0


def section_keys(section: str, preset: str = "tiny") -> list[Key]:
    """The keys of a settings table that --set accepts (for [data]: see ``data_keys``)."""
    cls = SECTIONS[section]
    if cls is None:
        return []
    notes = _field_notes(cls)
    defaults = PRESETS[preset].to_dict() if section == "model" else {}
    choices, ranges = getattr(cls, "CHOICES", {}), getattr(cls, "RANGES", {})
    keys = []
    for f in dataclasses.fields(cls):
        if f"{section}.{f.name}" in DERIVED:
            continue
        default = defaults.get(f.name, _default(f))
        allowed = choices.get(f.name, ranges.get(f.name))
        keys.append(Key(f.name, str(f.type), default, allowed, notes.get(f.name, "")))
    return keys


def data_keys() -> list[tuple[list[str], list[Key]]]:
    """The [data] keys: (datasets, their options), datasets with the same options together
    ("file" stands for a user's .txt, .tsv or .csv file)."""
    groups: dict[tuple, tuple[list[str], list[Key]]] = {}
    for name, params in dataset_options().items():
        keys = [Key(p.name, str(p.annotation), p.default) for p in params]
        if name == "file":  # the command line's default, not the loader's
            keys = [_val_fraction(k) if k.name == "val_fraction" else k for k in keys]
            keys = [_cache(k) if k.name == "cache" else k for k in keys]
        keys = [_num_examples(k) if k.name == "num_examples" else k for k in keys]
        groups.setdefault(tuple(keys), ([], keys))[0].append(name)
    overflow = Key(
        "overflow", "str", DEFAULT_OVERFLOW, OVERFLOW, "an example longer than model.max_len"
    )
    workers = Key("workers", "int | None", None, ">= 1", WORKERS_NOTE)
    return [
        *groups.values(),
        (["any seq2seq or classification data"], [overflow]),
        (["any data"], [workers]),
    ]


WORKERS_NOTE = (
    "the most processes that encode the data into the token cache (default: "
    "$GLASSFORMER_WORKERS, else every CPU the run may use; 1: the run's own process)"
)


def _num_examples(key: Key) -> Key:
    train, most = DEFAULT_SIZES["train"], DEFAULT_SIZES["validation"]
    note = f"of the training part; the validation part holds as many, at most {most:,}"
    return dataclasses.replace(key, default=train, allowed=">= 1", note=note)


def _val_fraction(key: Key) -> Key:
    note = "held out of the file for validation when --val-data is not given"
    return dataclasses.replace(key, default=VAL_FRACTION, allowed="in [0, 1)", note=note)


def _cache(key: Key) -> Key:
    note = (
        "the folder of the token cache, for texts and records (default: $GLASSFORMER_CACHE, else "
        "~/.cache/glassformer/tokens)"
    )
    return dataclasses.replace(key, allowed="a folder", note=note)


# Showing --------------------------------------------------------------------------------------
def _render(section: str, preset: str) -> str:
    heading = f"[{section}]  {HEADINGS.get(section, '')}".rstrip()
    if section == "model":
        heading += f"; defaults: the {preset} preset's"
    rows: list[tuple[str, ...]] = [_row(k) for k in section_keys(section, preset)]
    if section == "data":
        for names, keys in data_keys():
            shown = "a file (.txt, .tsv, .csv)" if names == ["file"] else ", ".join(names)
            rows.append((f"{shown}:" if keys else f"{shown}: none",))
            rows.extend(("  " + k.name, *_row(k)[1:]) for k in keys)
    derived = [k.split(".", 1)[1] for k in DERIVED if k.startswith(f"{section}.")]
    lines = [heading, *_table(rows)]
    if derived:
        lines.append(f"  set by the run, not by --set: {', '.join(derived)}")
    return "\n".join(lines)


def _row(key: Key) -> tuple[str, ...]:
    if isinstance(key.allowed, tuple):
        allowed = ", ".join(key.allowed)
    else:
        allowed = "" if key.allowed is None else str(key.allowed)
    return (key.name, key.type, _value(key.default), allowed, key.note)


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max((len(r[i]) for r in rows if len(r) > 1), default=0) for i in range(4)]
    out = []
    for r in rows:
        if len(r) == 1:  # a dataset's name over its options
            out.append("  " + r[0])
            continue
        cells = [c.ljust(w) for c, w in zip(r[:4], widths, strict=True)] + [r[4]]
        out.append(("  " + "  ".join(cells)).rstrip())
    return out


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if value is dataclasses.MISSING or value is inspect.Parameter.empty:
        return "required"
    return toml_value(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _field_notes(cls: type) -> dict[str, str]:
    """The note of each field in the source of ``cls``: the first paragraph of the string under
    the field (its attribute docstring, which the API reference renders), else the comment at
    the end of the field's line ({} when the source is not available)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments = {
        t.start[0]: t.string.lstrip("#").strip()
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    }
    notes = {}
    body = ast.parse(source).body[0].body
    for node, after in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        constant = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        doc = after.value.value if constant else None
        if isinstance(doc, str):
            note = " ".join(inspect.cleandoc(doc).split("\n\n", 1)[0].split()).removesuffix(".")
            if note.split()[0][1:].islower():  # a sentence's capital, not a name's (LoRA's)
                note = note[0].lower() + note[1:]
            notes[node.target.id] = note
        elif node.lineno in comments:
            notes[node.target.id] = comments[node.lineno]
    return notes
