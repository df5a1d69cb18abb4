"""``glassformer predict``: a classifier's label and probability, or a masked LM's top-k
candidates for every <MASK>; one result per input line, JSON lines with --json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..data.user_files import read_utf8
from ..generation.inputs import check_text
from ..models import DecoderClassifier, EncoderClassifier, EncoderMLM
from ..models.heads import ClassificationHead
from ..predict import InputTooLong, classify, fill_mask
from .errors import UsageError
from .model_source import load_model_dir

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """Print one prediction per input text."""
    texts, where = _inputs(args)
    kinds = (EncoderClassifier, DecoderClassifier, EncoderMLM)
    model, _ = load_model_dir(args.checkpoint, kinds, "predict", args.device)
    if args.truncate and not isinstance(model, ClassificationHead):
        raise UsageError(
            "--truncate is for classifier checkpoints: a masked LM reads the whole text (a "
            "<MASK> past max_len would be lost); shorten the text instead"
        )
    try:
        if isinstance(model, ClassificationHead):
            results = classify(model, texts, tokenizer=model.tokenizer, truncate=args.truncate)
            top_k = args.top_k or 1
            rows = [_classification(t, r, top_k) for t, r in zip(texts, results, strict=True)]
        else:
            results = fill_mask(model, model.tokenizer, texts, top_k=args.top_k or 5)
            rows = [_fill(t, r) for t, r in zip(texts, results, strict=True)]
    except InputTooLong as err:
        remedy = (
            f"shorten it, or add --truncate to cut it to {err.max_len} tokens"
            if isinstance(model, ClassificationHead)
            else "shorten it (a masked LM reads the whole text)"
        )
        raise UsageError(
            f"{where[err.index]} has {err.tokens} tokens but the checkpoint's max_len is "
            f"{err.max_len}: {remedy}"
        ) from None
    for text, row in zip(texts, rows, strict=True):
        print(json.dumps(row, ensure_ascii=False) if args.json else _line(text, row))
    return 0


def _inputs(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The texts, and how a message names each (``--text``, ``text 2 of --text``, ``line 7
    of PATH``); an empty --text is refused by the rule of the explorer (check_text)."""
    if args.file is not None:
        numbered = _read_lines(args.file)
        if not numbered:
            raise UsageError(f"--file {args.file} has no text: allowed one input per line")
        return [t for _, t in numbered], [f"line {n} of {args.file}" for n, _ in numbered]
    texts = args.text
    where = (
        ["--text"] if len(texts) == 1 else [f"text {i} of --text" for i in range(1, len(texts) + 1)]
    )
    for text, name in zip(texts, where, strict=True):
        try:
            check_text(text, name)
        except ValueError as err:
            raise UsageError(str(err)) from None
    return texts, where


def _read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each non-blank line."""
    try:
        text = read_utf8(path)
    except ValueError as err:
        raise ValueError(f"--file: {err}") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _classification(text: str, result, top_k: int) -> dict[str, Any]:
    ranked = sorted(result.probabilities.items(), key=lambda kv: -kv[1])[:top_k]
    return {
        "text": text,
        "label": result.label,
        "probability": result.probability,
        "top": [{"label": k, "probability": p} for k, p in ranked],
    }


def _fill(text: str, predictions) -> dict[str, Any]:
    masks = [
        {
            "position": p.position,
            "candidates": [
                {"token": c.token, "token_id": c.token_id, "probability": c.probability}
                for c in p.candidates
            ],
        }
        for p in predictions
    ]
    return {"text": text, "masks": masks}


def _line(text: str, row: dict[str, Any]) -> str:
    """One human-readable line: ``label  0.973  text`` or ``text  ->  <MASK>1: a 0.41 | ...``."""
    if "label" in row:
        top = "  ".join(f"{r['label']} {r['probability']:.4f}" for r in row["top"])
        return f"{top}\t{text}"
    parts = []
    for i, mask in enumerate(row["masks"], 1):
        cands = " | ".join(f"{c['token']!r} {c['probability']:.4f}" for c in mask["candidates"])
        parts.append(f"<MASK>{i}: {cands}")
    return f"{text}\t" + "\t".join(parts)
