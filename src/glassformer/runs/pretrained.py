"""Starting a run from a pre-trained model: ``glassformer train --init-from PATH``,
``Run.plan(..., init_from=PATH)``.

PATH is a glassformer checkpoint or run folder (models/checkpoint.py reads both), or a Hugging
Face model directory (config.json + weights of a class ``glassformer.from_huggingface`` reads:
GPT-2, Llama, BERT, BART; needs ``transformers``). The weights fix the architecture: the model
config is the checkpoint's, and a ``--set model.X`` that contradicts it is refused naming both
values; the settings the weights do not fix (``FREE``: dropout, initialisation of new parts,
attention graphs, the classifier's pooling, fixed or learned embeddings) may be set. The
model's own tokenizer is used.

What the task takes from each family (``TASKS[task].families``):

    lm        a decoder                 DecoderLM (a new LM head if the checkpoint has none)
    mlm       an encoder                EncoderMLM (a new MLM head on a BertModel / classifier)
    seq2seq   an encoder-decoder        EncoderDecoder
    classify  an encoder                EncoderClassifier, pooled as pre-trained: BERT's
                                        [CLS] + pooler when the checkpoint has a pooler, else
                                        the mean over the real tokens
              a decoder                 DecoderClassifier, pooled at the last real token,
                                        no dropout before the classifier (Hugging Face's
                                        score; ``--set model.classifier_dropout`` sets one)

The weights are copied by name (start_weights.py); what the new model has and the checkpoint
lacks is new (initialised as a model of that config is, seeded by train.seed), and
``StartReport`` says which parts are new and which of the checkpoint's were left out.

Defaults for fine-tuning, written into the run's settings where the user gave none (so that
run.json records them and ``--resume`` rebuilds the same plan): ``train.lr`` 5e-5 (Hugging
Face's examples for full fine-tuning), ``train.warmup`` 10% of the steps, and for lm and mlm
``train.context`` 1,024 tokens per training window (capped at the model's max_len).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..finetune import merge_lora
from ..models.checkpoint import CONFIG_FILE
from ..models.config import GRAPH_FIELDS, ModelConfig
from ..models.registry import model_class
from ..tasks import TASKS
from ..training.layout import CHECKPOINTS, best_or_latest
from .errors import RunError
from .folder import RUN_FILE, load_model
from .model_folders import is_huggingface_dir, peek_huggingface, read_huggingface
from .start_weights import Pretrained, StartReport

__all__ = [
    "FINE_TUNE_CONTEXT",
    "FINE_TUNE_LR",
    "FREE",
    "Pretrained",
    "StartReport",
    "check_init_path",
    "fine_tune_defaults",
    "load_start",
]

FINE_TUNE_LR = 5e-5
WARMUP_FRACTION = 0.1  # of the steps
FINE_TUNE_CONTEXT = 1024  # tokens per lm / mlm training window, at most the model's max_len
# model settings the weights do not fix
FREE = (
    "dropout",
    "attn_dropout",
    "ff_dropout",
    "embed_dropout",
    "classifier_dropout",
    "init_std",
    "pooling",
    "pooler",
    "embeddings",
    *GRAPH_FIELDS,
)
WHAT = (
    "allowed a glassformer checkpoint or run folder, or a Hugging Face model directory "
    "(config.json and its weights)"
)


def check_init_path(name: str) -> str:
    """``init_from`` ``name`` as an absolute path, refused when it is not a folder that holds a
    model (a config.json, or a run folder's checkpoints)."""
    if not name.strip():
        raise RunError(f"init_from {name!r}: an empty path; {WHAT}", argument="init_from")
    path = Path(name).expanduser()
    if not path.is_dir():
        what = "no such folder" if not path.exists() else "not a folder"
        raise RunError(f"init_from {name}: {what}; {WHAT}", argument="init_from")
    if not (path / CONFIG_FILE).is_file():
        _check_run_has_checkpoint(name, path)
    if not (path / CONFIG_FILE).is_file() and not (path / CHECKPOINTS).is_dir():
        raise RunError(
            f"init_from {name}: not a model (no {CONFIG_FILE}); {WHAT}", argument="init_from"
        )
    return str(path.resolve())


def _check_run_has_checkpoint(name: str, path: Path) -> None:
    """Refuse a run folder (run.json or checkpoints/) that has saved no checkpoint yet."""
    is_run = (path / RUN_FILE).is_file() or (path / CHECKPOINTS).is_dir()
    if is_run and best_or_latest(path) is None:
        raise RunError(
            f"init_from {name}: the run has no checkpoint yet (nothing in "
            f"{path / CHECKPOINTS}); train it until it saves one (train.save_every), or pick a "
            "run or checkpoint folder that has one",
            argument="init_from",
        )


def fine_tune_defaults(task: str, steps: int) -> dict[str, Any]:
    """The [train] defaults of a run started from a pre-trained model (module docstring)."""
    defaults: dict[str, Any] = {"lr": FINE_TUNE_LR, "warmup": round(WARMUP_FRACTION * steps)}
    if TASKS[task].data == "lm":
        defaults["context"] = FINE_TUNE_CONTEXT
    return defaults


def load_start(path: str, task: str, overrides: dict[str, Any], labels: tuple[str, ...]):
    """The pre-trained model at ``path`` (checked by check_init_path) for ``task``: its
    tokenizer, and the class and config of the run's model (module docstring); RunError when
    the family does not do the task, the settings contradict the weights, or the tokenizer
    does not fit. A Hugging Face directory's config.json and tokenizer are checked before its
    weights are read and converted."""
    folder = Path(path)
    if is_huggingface_dir(folder):
        cls, meta, tokenizer = peek_huggingface(folder, "init_from")
        _check_family(path, cls.family, cls.__name__, task)
        if type(meta.get("vocab_size")) is int:  # else the conversion says what is wrong
            _check_tokenizer(path, tokenizer, meta["vocab_size"], task)
        model = read_huggingface(folder, "init_from", tokenizer)
    else:
        model, tokenizer = _read_checkpoint(folder)
    config = model.config
    _check_family(path, config.family, type(model).__name__, task)
    _check_tokenizer(path, tokenizer, config.vocab_size, task)
    cls = model_class(TASKS[task].families[config.family])
    fixed = _check_overrides(path, config, overrides)
    derived = _task_fields(type(model).__name__, config, task, labels)
    try:
        config = ModelConfig.from_dict({**config.to_dict(), **derived, **fixed})
    except (TypeError, ValueError) as err:
        raise RunError(f"model settings: {err}") from None
    return Pretrained(path, model, tokenizer, cls, config)


def _check_family(path: str, family: str, name: str, task: str) -> None:
    """Refuse a model whose family does not do ``task``."""
    families = TASKS[task].families
    if family not in families:
        need = " or ".join(f"{f} ({c})" for f, c in families.items())
        article = "an" if family[0] in "aeiou" else "a"
        raise RunError(
            f"init_from {path}: {article} {family} model ({name}); run.task={task} needs {need}",
            argument="init_from",
            names=["run.task"],
        )


def _check_tokenizer(path: str, tokenizer, vocab_size: int, task: str) -> None:
    """Refuse a tokenizer with ids the model has no embedding row for: an id its file defines
    (``file_vocab_size``), or a role the task uses (<PAD>, <BOS>, <EOS>; <MASK> for mlm). A
    role the file lacks is added past its ids (tokenizers/hf.py); where the task never uses
    it (a decoder's <MASK>), it needs no row."""
    n = tokenizer.file_vocab_size
    if n > vocab_size:
        raise RunError(
            f"init_from {path}: its tokenizer defines {n} ids but the model's vocabulary is "
            f"{vocab_size}; ids {vocab_size} .. {n - 1} have no embedding: give the folder "
            "the tokenizer the model was trained with",
            argument="init_from",
        )
    used = ("<PAD>", "<BOS>", "<EOS>", *(("<MASK>",) if task == "mlm" else ()))
    for role in used:
        i = tokenizer._role_id(role)
        if i >= vocab_size:
            raise RunError(
                f"init_from {path}: run.task={task} uses the role {role}, which its "
                f"tokenizer lacks (added as id {i}, past the model's vocabulary of {vocab_size}): "
                f"give the folder a tokenizer that names a {role} token",
                argument="init_from",
                names=["run.task"],
            )


def _read_checkpoint(path: Path):
    """(model, tokenizer) of a glassformer checkpoint or run folder; a model with LoRA
    layers starts the run merged (W + (alpha / r) B A, finetune/lora.py)."""
    try:
        model = load_model(path)
    except ValueError as err:  # its message names the file
        where = "" if str(err).startswith(str(path)) else f"{path}: "
        raise RunError(f"init_from {where}{err}", argument="init_from") from None
    merge_lora(model)
    if model.tokenizer is None:
        raise RunError(
            f"init_from {path}: the checkpoint has no tokenizer.json; the run needs the "
            "tokenizer the model was trained with",
            argument="init_from",
        )
    return model, model.tokenizer


def _check_overrides(path: str, config: ModelConfig, overrides: dict[str, Any]) -> dict:
    """The [model] settings that may apply; one that contradicts the weights is refused."""
    for key, value in overrides.items():
        if key in FREE:
            continue
        have = getattr(config, key)
        resolved = getattr(config, f"resolved_{key}", have)
        if value != have and value != resolved:
            raise RunError(
                f"model.{key}={value!r} contradicts the weights of the model at {path}, "
                f"which fix {key}={resolved!r}; leave it out (settings the weights do not "
                f"fix: {', '.join(FREE[:5])}, ...)",
                names=[f"model.{key}"],
            )
    return {k: v for k, v in overrides.items() if k in FREE}


def _task_fields(source: str, config: ModelConfig, task: str, labels) -> dict[str, Any]:
    """The config fields the task sets: a classifier's classes and its pooling. A classifier
    whose classes are the data's labels keeps them in its order (its head reads as trained)."""
    if task != "classify":
        return {}
    classifier = source in ("EncoderClassifier", "DecoderClassifier")
    known = [str(n) for n in config.extra.get("labels") or []] if classifier else []
    if sorted(known) == sorted(labels):  # the classifier's classes: kept, in its order
        labels = known
    fields: dict[str, Any] = {
        "n_classes": len(labels),
        "extra": {**config.extra, "labels": list(labels)},
    }
    if source in ("EncoderClassifier", "DecoderClassifier"):
        return fields  # pooled as it was trained
    if config.family == "decoder":  # as GPT2ForSequenceClassification: score(h), no dropout
        return {**fields, "pooling": "last", "pooler": False, "classifier_dropout": 0.0}
    if config.pooler:  # BERT: [CLS] and the pre-trained pooler
        return {**fields, "pooling": "cls"}
    return {**fields, "pooling": "mean"}
