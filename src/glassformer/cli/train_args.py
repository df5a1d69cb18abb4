"""The options of ``glassformer train`` (train.py runs it) and the settings they give.

Settings are layered: a config (the built-in demo's when none of the options in CHOOSES_RUN is
given, or --config), then --set, then the flags (--task, --data, ..., --steps, --seed).
The parser is built from modules that import nothing heavy (names.py, preset_shapes.py,
tasks.py); ``gather_settings`` imports the settings machinery, which loads PyTorch, when called.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..names import STRATEGIES, builtin_config_names
from ..preset_shapes import SHAPES
from ..tasks import TASKS
from .options import add_device, handler, non_negative, positive

__all__ = ["CHOOSES_RUN", "DEFINES_RUN", "DEMO", "add_parser", "gather_settings"]

DEMO = "shakespeare-char"
# Options that say what to train (the demo runs when none is given; --resume checks them).
CHOOSES_RUN = (
    "config", "task", "data", "val_data", "tokenizer", "vocab_size", "model", "init_from"
)
DEFINES_RUN = (*CHOOSES_RUN, "set", "seed")

DESCRIPTION = """\
Train a model on a built-in task or your own files, with checkpoints, metrics.jsonl and a loss
curve in the run directory. With none of --config, --task, --data, --val-data, --tokenizer,
--vocab-size and --model it runs the built-in demo (config shakespeare-char): a character-level
GPT on Shakespeare's plays that trains in a few minutes on a CPU and prints a sample.
Settings are layered: the config file, then --set, then the flags."""
EPILOG = """\
examples:
  glassformer train                                     the built-in demo (Shakespeare, char GPT)
  glassformer train --data reverse --steps 3000         seq2seq on a built-in synthetic task
  glassformer train --data is_sorted                    a classifier on a built-in task
  glassformer train --task seq2seq --data pairs.tsv --val-data dev.tsv
  glassformer train --data reviews.csv --set model.n_layer=2 --set train.lr=1e-3
  glassformer train --data reviews.csv --init-from path/to/bert   fine-tune a pre-trained model
  glassformer train --out runs/shakespeare-char --resume --steps 2000   continue / extend

settings tables (for --config FILE.toml and --set SECTION.KEY=VALUE):
  [run]     task, data, val_data, tokenizer, vocab_size, model, init_from, out
  [model]   ModelConfig fields applied to the preset (d_model, n_layer, max_len, dropout, ...)
  [train]   TrainConfig fields (steps, batch_size, lr, warmup, eval_every, save_every, ...)
  [data]    options of the dataset (num_examples, max_length, ... of a synthetic task;
            one_per_line for a .txt file; val_fraction of a file, default 0.1; cache, the
            folder of a text's token files; text_field, label_field, source_field,
            target_field: a JSON Lines, Parquet or datasets record's fields; overflow of
            seq2seq and classification data: truncate (default), drop or error; workers,
            the most processes that encode the data into the token cache)
  [sample]  the sample printed after a language-model run (prompt, max_new_tokens,
            temperature, top_k, top_p, seed)
every key with its type, default and allowed values: glassformer config

environment:
  GLASSFORMER_CACHE=DIR  the folder of the token cache: a text file's tokens, encoded once
            (default ~/.cache/glassformer/tokens; data.cache names another for one run)
  GLASSFORMER_WORKERS=N  the most processes that encode data into the token cache (default:
            every CPU the run may use; data.workers sets it for one run)
  GLASSFORMER_TEST_SCALE=F  a test aid (0 < F <= 1): steps, evaluations, generated examples
            and the sample times F, rounded up (and the batches of glassformer eval), so that
            a documented command runs in seconds
"""


def add_parser(commands) -> None:
    """Add ``train`` to the subcommands; train.py's ``run`` handles it."""
    p = commands.add_parser(
        "train",
        help="train a model (no arguments: the built-in Shakespeare demo)",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--task",
        choices=tuple(TASKS),
        help=f"{', '.join(f'{t.name} ({t.help})' for t in TASKS.values())}; default: the "
        "data's own task",
    )
    p.add_argument(
        "--data",
        metavar="NAME|PATH",
        help="a built-in dataset (shakespeare, reverse, sort, addition, is_sorted, induction, "
        "interleaved) or a file: .txt (text), .tsv (source<TAB>target or label<TAB>text), .csv "
        "(label,text), each also .gz; .jsonl or .parquet ({\"text\"}, {\"label\", \"text\"} or "
        "{\"source\", \"target\"} records); a folder of .txt files or a datasets folder",
    )
    p.add_argument(
        "--val-data",
        metavar="PATH",
        help="a validation file in the same format, or 'none'; default: a built-in dataset's "
        "validation split; for a file, 10%% of it held out (data.val_fraction)",
    )
    p.add_argument(
        "--tokenizer",
        choices=("char", "word", "bpe"),
        help="trained on the training data (default: char)",
    )
    p.add_argument(
        "--vocab-size",
        type=positive,
        metavar="N",
        help="bpe: the vocabulary to learn (default 512); word: keep at most N tokens",
    )
    p.add_argument(
        "--model",
        metavar="PRESET",
        help=f"a model preset ({', '.join(SHAPES)}), resized to the tokenizer; default: "
        f"{_default_presets()}",
    )
    p.add_argument(
        "--init-from",
        metavar="PATH",
        help="start from a pre-trained model instead of --model and --tokenizer: a glassformer "
        "checkpoint or run folder, or a Hugging Face model directory (GPT-2, Llama, BERT, "
        "BART); its architecture and tokenizer are kept, a new head added where the task "
        "needs one; defaults then train.lr=5e-5, train.warmup = 10%% of the steps, "
        "train.context=1024 (lm, mlm)",
    )
    p.add_argument(
        "--config",
        metavar="NAME|FILE.toml",
        help="settings as TOML tables [run] [model] [train] [data] [sample]; built-in: "
        + ", ".join(builtin_config_names()),
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override one setting, e.g. model.d_model=64, train.lr=1e-3, "
        'data.num_examples=5000 (repeatable; VALUE is read as TOML, e.g. true, 1e-3, "text")',
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="the run directory (default: the config's run.out, runs/NAME for a built-in "
        "config NAME; else runs/<data>-<tokenizer>, or runs/<data>-<task>-<tokenizer> for "
        "tasks other than lm)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its newest checkpoint with the settings in its "
        "run.json; a larger --steps extends it",
    )
    p.add_argument(
        "--data-changed-ok",
        action="store_true",
        help="with --resume: continue even though the training or validation data are not "
        "those the run was trained on (run.json records their size and SHA-256; without this "
        "option a change is refused)",
    )
    p.add_argument("--steps", type=non_negative, metavar="N", help="optimizer steps in all")
    add_device(p, default=None)
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        help="under torchrun: ddp replicates the model in every process, fsdp shards it "
        "(parameters, gradients, optimizer state); ignored in a single process",
    )
    p.add_argument("--seed", type=non_negative, metavar="N", help="seed of the whole run")
    p.set_defaults(handler=handler("train"))


def gather_settings(
    args: argparse.Namespace, base: dict[str, dict[str, Any]] | None = None
) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The layered settings of the command (on top of ``base``, e.g. a resumed run's, when
    given), and the name of the built-in config used, if any."""
    from ..runs import (
        RUN_OPTIONS,
        TRAIN_OPTIONS,
        load_config,
        merge,
        option_tables,
        parse_assignment,
    )

    demo = base is None and not any(getattr(args, k) not in (None, []) for k in CHOOSES_RUN)
    config_name = args.config or (DEMO if demo else None)
    layers = [base or {}, load_config(config_name) if config_name else {}]
    overrides: dict[str, dict[str, Any]] = {}
    for text in args.set:
        section, key, value = parse_assignment(text)
        overrides.setdefault(section, {})[key] = value
    flags = option_tables({k: getattr(args, k) for k in RUN_OPTIONS + TRAIN_OPTIONS})
    shown = config_name if config_name in builtin_config_names() else None
    return merge(*layers, overrides, flags), shown


def _default_presets() -> str:
    """``tiny (lm), tiny-encoder (mlm, classify), ...``: each task's default preset."""
    tasks: dict[str, list[str]] = {}
    for task in TASKS.values():
        tasks.setdefault(task.preset, []).append(task.name)
    return ", ".join(f"{preset} ({', '.join(names)})" for preset, names in tasks.items())
