"""The settings of ``glassformer train``: TOML tables, ``--set`` overrides, and their checks.

Settings are plain data in five tables (a TOML file, a built-in config, ``--set`` and the
command's flags each give some of them; later layers win)::

    [run]     task, data, val_data, tokenizer, vocab_size, model (a preset), init_from, out
    [model]   ModelConfig fields applied to the preset (the sizes the data decides excluded)
    [train]   TrainConfig fields (steps, batch_size, lr, ...)
    [data]    options of the dataset: num_examples, ... of a synthetic task; one_per_line
              and val_fraction (default 0.1 when no --val-data is given: that part of the file
              validates) of a file; text_field, label_field, source_field, target_field: the
              fields of a JSON Lines, Parquet or datasets record (data/formats/); overflow of
              seq2seq and classification data ("truncate",
              the default at the command line, "drop" or "error": what happens to an example
              longer than model.max_len); workers of any data (the most processes that
              encode it into the token cache; --resume may change it); tokenizer_sample (the
              most characters a BPE tokenizer learns from; default 100,000,000, 0: all)
    [sample]  the text sampled at the end of a language-model run

``--set section.key=value`` reads ``value`` as a TOML literal (``64``, ``1e-3``, ``true``,
``"text"``, ``[1, 2]``), then as JSON (``null``), and otherwise keeps it as a string
(``model.attention_graph=window:64*4,full*2``; in a per-layer list, ``"full"`` is dense
attention, as TOML has no null).
Unknown tables and keys are refused naming the allowed ones; values are type-checked against
the dataclass fields they set. The [data] keys are checked by the dataset that receives them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..limits import Range, check_fields
from ..models.config import GRAPH_FIELDS, ModelConfig
from ..names import SETTINGS_TABLES, builtin_config_names, builtin_configs
from ..structured import NestingError, loads_json, loads_toml
from ..tasks import TASK_NAMES
from ..training import TrainConfig
from .errors import RunError

__all__ = [
    "SECTIONS", "RunSettings", "SampleSettings", "builtin_config_names", "check_settings",
    "load_config", "merge", "parse_assignment", "parse_value", "to_toml", "toml_value",
]

Settings = dict[str, dict[str, Any]]
TOKENIZER_KINDS = ("char", "word", "bpe")


@dataclass
class RunSettings:
    """What to train on, and where: the [run] table."""

    task: str | None = None  # lm | mlm | seq2seq | classify (None: the data's own task)
    data: str = "shakespeare"  # a built-in dataset name, or a path to a file or folder
    val_data: str | None = None  # a file or "none" (None: built-in split, or part of the file)
    tokenizer: str = "char"  # char | word | bpe
    vocab_size: int | None = None  # bpe: the vocabulary to learn; word: the most kept
    model: str | None = None  # a preset (None: tiny, tiny-encoder or tiny-seq2seq by task)
    init_from: str | None = None  # start from this checkpoint, run or Hugging Face model folder
    out: str | None = None  # the run directory (None: runs/<data>[-<task>]-<tokenizer>)

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "task": TASK_NAMES,
        "tokenizer": TOKENIZER_KINDS,
    }
    RANGES: ClassVar[dict[str, Range]] = {"vocab_size": Range(1)}

    def __post_init__(self) -> None:
        _check("run", self)


@dataclass
class SampleSettings:
    """The sample printed after a language-model run: the [sample] table."""

    prompt: str = ""  # text to continue (after <BOS>)
    max_new_tokens: int = 300  # 0: no sample
    temperature: float = 0.8
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None  # None: the run's train.seed

    RANGES: ClassVar[dict[str, Range]] = {  # as GenerationConfig allows them
        "max_new_tokens": Range(0),
        "temperature": Range(0.0),
        "top_k": Range(0),
        "top_p": Range(0.0, 1.0, open_low=True),
    }

    def __post_init__(self) -> None:
        _check("sample", self)


def _check(section: str, settings: Any) -> None:
    try:
        check_fields(settings)
    except ValueError as err:
        raise RunError(f"{section}.{err}") from None


# Keys the data decides (ModelConfig) or another table holds (TrainConfig.task).
DERIVED = {
    "model.family": "the family follows the task (run.task) and the preset (run.model)",
    "model.vocab_size": "vocab_size is the tokenizer's (use run.vocab_size for bpe or word)",
    "model.tgt_vocab_size": "the target vocabulary is the tokenizer's",
    "model.n_classes": "n_classes is the number of labels in the training data",
    "model.pad_id": "pad_id is the tokenizer's <PAD>",
    "model.decoder_start_id": "decoder_start_id is the tokenizer's <BOS>",
    "model.extra": "extra holds the class labels, taken from the data",
    "train.task": "set the task with run.task",
}
# each table's class (its fields are its keys); [data] has none: the dataset checks its keys
SECTIONS: dict[str, type | None] = dict(
    zip(SETTINGS_TABLES, (RunSettings, ModelConfig, TrainConfig, None, SampleSettings), strict=True)
)


def allowed_keys(section: str) -> list[str]:
    cls = SECTIONS[section]
    names = [f.name for f in dataclasses.fields(cls)] if cls else []
    return [n for n in names if f"{section}.{n}" not in DERIVED]


# Reading --------------------------------------------------------------------------------------
def builtin_config_path(name: str) -> str:
    """Where the built-in config ``name`` lives (for messages)."""
    return str(builtin_configs() / f"{name}.toml")


def load_config(name_or_path: str) -> Settings:
    """A built-in config by name, or a TOML file; checked (see ``check_settings``)."""
    if name_or_path in builtin_config_names():
        source = builtin_configs() / f"{name_or_path}.toml"
    else:
        source = Path(name_or_path)
        if not source.is_file():
            names = ", ".join(builtin_config_names())
            what = "no such file"
            if source.is_dir():
                what = "is a folder"
            elif source.exists():
                what = "is not a regular file"
            raise RunError(
                f"config {name_or_path}: {what}, and not a built-in config; allowed: a TOML "
                f"file (e.g. my-run.toml) or a built-in config ({names})",
                argument="config",
            )
    where = f"config {name_or_path}"
    try:
        data = loads_toml(source.read_text(encoding="utf-8"), where)
    except UnicodeDecodeError as err:
        raise RunError(f"{where}: not valid TOML ({err})", argument="config") from None
    except ValueError as err:
        raise RunError(str(err), argument="config") from None
    for key, value in data.items():
        if not isinstance(value, dict):
            raise RunError(
                f"{where}: {key!r} must be a table [{key}]; the file holds the tables "
                f"{', '.join(f'[{s}]' for s in SECTIONS)}",
                argument="config",
            )
    try:
        check_settings(data)
    except RunError as err:
        raise RunError(f"{where}: {err}", argument="config") from None
    return data


def parse_value(text: str, where: str = "the value") -> Any:
    """A TOML literal, else a JSON literal, else the text itself; a value nested too deeply
    is refused (``RunError`` naming ``where``)."""
    readings = (lambda: loads_toml(f"v = {text}", where)["v"], lambda: loads_json(text, where))
    for read in readings:
        try:
            return read()
        except NestingError as err:
            raise RunError(str(err)) from None
        except ValueError:
            pass
    return text


def parse_assignment(text: str) -> tuple[str, str, Any]:
    """``section.key=value`` -> (section, key, value), the key checked against the section.
    A mistake is a ``RunError`` that opens with "setting" (the command line's ``--set``)."""
    name, eq, raw = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise RunError(
            f"setting {text!r}: expected SECTION.KEY=VALUE, e.g. train.lr=1e-3",
            argument="setting",
        )
    section, dot, key = name.partition(".")
    if not dot or not key:
        raise RunError(
            f"setting {text!r}: the key needs a section; allowed sections: "
            f"{', '.join(SECTIONS)} (e.g. model.d_model=64)",
            argument="setting",
        )
    try:
        value = parse_value(raw.strip(), f"setting {name}")
    except RunError as err:
        raise RunError(str(err), argument="setting") from None
    if section == "model" and key in GRAPH_FIELDS and isinstance(value, list):
        value = ["full" if v is None else v for v in value]  # TOML has no null
    check_settings({section: {key: value}})
    return section, key, value


def merge(*layers: Settings) -> Settings:
    """Tables of later layers override the same keys of earlier ones."""
    out: Settings = {}
    for layer in layers:
        for section, table in layer.items():
            out.setdefault(section, {}).update(copy.deepcopy(table))
    return out


# Checking -------------------------------------------------------------------------------------
def check_settings(settings: Settings) -> None:
    """Refuse unknown tables, unknown or derived keys, and values of the wrong type."""
    for section, table in settings.items():
        if section not in SECTIONS:
            raise RunError(f"unknown settings table {section!r}; allowed: {', '.join(SECTIONS)}")
        cls = SECTIONS[section]
        if cls is None:
            continue
        fields = {f.name: f for f in dataclasses.fields(cls)}
        other_names = getattr(cls, "OTHER_NAMES", {})  # ModelConfig's: ff_dim -> d_ff
        for key, value in table.items():
            where = f"{section}.{key}"
            if key in other_names:
                right = f"{section}.{other_names[key]}"
                if right in DERIVED:
                    raise RunError(f"{where} cannot be set: {DERIVED[right]}")
                raise RunError(f"{where} is not a {cls.__name__} field; use {right}")
            if where in DERIVED:
                raise RunError(f"{where} cannot be set: {DERIVED[where]}")
            if key not in fields:
                raise RunError(
                    f"unknown key {where}; allowed in [{section}]: "
                    f"{', '.join(allowed_keys(section))}"
                )
            kind = str(fields[key].type)
            if not _has_type(value, kind):
                raise RunError(f"{where}={value!r} must be of type {kind}")


def _has_type(value: Any, annotation: str) -> bool:
    """Does ``value`` (a TOML/JSON value) fit a field annotation such as ``int | None``?"""
    for part in (p.strip() for p in annotation.split("|")):
        if part == "None" and value is None:
            return True
        if part == "bool" and isinstance(value, bool):
            return True
        if part == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if part == "float" and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if part == "str" and isinstance(value, str):
            return True
        if part.startswith("dict") and isinstance(value, dict):
            return True
        if part.startswith(("tuple", "list")) and isinstance(value, list | tuple):
            return True
        if part in ("Any", "object"):
            return True
    return False


# Showing --------------------------------------------------------------------------------------
def to_toml(settings: Settings) -> str:
    """The settings as a TOML document (tables in SECTIONS order; None values left out)."""
    lines: list[str] = []
    for section in SECTIONS:
        table = {k: v for k, v in settings.get(section, {}).items() if v is not None}
        if not table:
            continue
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in table.items())
        lines.append("")
    return "\n".join(lines)


def toml_value(value: Any) -> str:
    """``value`` as a TOML literal: true, 1e-3, "text", [1, 2], {a = 1}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)
