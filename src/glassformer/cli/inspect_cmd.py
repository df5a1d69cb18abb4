"""``glassformer inspect`` (pictures of attention, masks, residual stream, positions) and
``glassformer trace`` (the forward pass step by step: formulas, shapes, a few values, and
the model's prediction).

    glassformer inspect --checkpoint DIR --text TEXT --out DIR [--layers L ...] [--heads H ...]
                        [--cross] [--target TEXT] [--pad-to N] [--threshold W] [--position N]
                        [--circuits [--answer TOKEN] [--wrong TOKEN] [--corrupt TEXT]]
    glassformer trace --checkpoint DIR --text TEXT [--layer N] [--target TEXT]

Their options: inspect_args.py; their handlers are ``run_inspect`` and ``run_trace``
(``run(args)`` dispatches on ``args.command``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..inspect import capture, plots
from ..inspect.inputs import analysed_position, corrupt_ids, encode_inputs
from ..inspect.readout import format_prediction
from ..inspect.trace import format_trace, trace
from ..models import DecoderClassifier, DecoderLM, EncoderDecoder, EncoderModel
from ..runs import output_dir
from ..safe_write import write_text
from . import inspect_circuits
from .inspect_graphs import draw_graphs, receptive_positions
from .model_source import load_model_dir

__all__ = ["run", "run_inspect", "run_trace"]

KINDS = (DecoderLM, DecoderClassifier, EncoderModel, EncoderDecoder)


def run(args: argparse.Namespace) -> int:
    return run_trace(args) if args.command == "trace" else run_inspect(args)


# trace ---------------------------------------------------------------------------------------
def run_trace(args: argparse.Namespace) -> int:
    model, _ = load_model_dir(args.checkpoint, KINDS, "trace", args.device)
    depth = max(len(s.blocks) for s in _stacks(model))
    if args.layer is not None and args.layer >= depth:
        raise ValueError(f"--layer {args.layer} is out of range: allowed 0..{depth - 1}")
    inputs = encode_inputs(model, args.text, args.target, None)
    model.eval()
    steps = trace(model, **inputs.kwargs, layer=args.layer)
    c = model.config
    placement = "pre-norm" if c.norm_first else "post-norm"
    print(f"{type(model).__name__}: d_model {c.d_model}, {c.n_head} heads, {placement}")
    for stack, labels in inputs.tokens.items():
        print(f"{stack} input ({len(labels)} tokens): {labels}")
    print(format_trace(steps))
    ids = inputs.kwargs["input_ids"]
    prediction = format_prediction(model, steps[-1].value, ids, model.tokenizer)
    if prediction:
        print("\n" + "\n".join(prediction))
    return 0


# inspect -------------------------------------------------------------------------------------
def run_inspect(args: argparse.Namespace) -> int:
    try:
        plots.require_matplotlib()
    except ImportError as err:
        raise ValueError(f"glassformer inspect: {err}") from None
    inspect_circuits.check_arguments(args)
    output_dir(args.out, "--out")
    model, _ = load_model_dir(args.checkpoint, KINDS, "inspect", args.device)
    if args.circuits:
        inspect_circuits.check_model(model, args.checkpoint)
    seq2seq = isinstance(model, EncoderDecoder)
    if args.cross and not seq2seq:
        raise ValueError(
            f"--cross needs an encoder-decoder checkpoint; this one holds a {type(model).__name__}"
        )
    layers = _checked("--layers", args.layers, min(len(s.blocks) for s in _stacks(model)))
    heads = _checked("--heads", args.heads, model.config.n_head)
    inputs = encode_inputs(model, args.text, args.target, args.pad_to)
    mask = inputs.kwargs.get("attention_mask")
    real = len(next(iter(inputs.tokens.values()))) if mask is None else int(mask.sum())
    positions = receptive_positions(inputs.tokens, real, args.position)
    corrupt = None
    if args.corrupt is not None:
        corrupt = corrupt_ids(model, args.corrupt, inputs, args.pad_to, ("--corrupt", "--text"))
    chosen = inspect_circuits.chosen_tokens(model, args)
    model.eval()
    with torch.inference_mode(), capture(model) as rec:
        model(**inputs.kwargs)
    files = _draw(rec, model, inputs.tokens, layers, heads, args.cross, args.out)
    files |= draw_graphs(
        rec, model, inputs.tokens, layers, heads, args.cross, args.out, args.threshold, positions
    )
    notes: list[str] = []
    if args.circuits:
        position = analysed_position(model, inputs, positions, args.position)
        found, notes = inspect_circuits.draw_circuits(
            model, inputs.kwargs, inputs.tokens, position, chosen, corrupt, args.out
        )
        files |= found
    _write_index(args.out, files, type(model).__name__, inputs.tokens, notes)
    print(f"wrote {len(files)} pictures and index.md to {args.out}")
    return 0


def _draw(rec, model, tokens, layers, heads, cross: bool, out: Path) -> dict[str, str]:
    """Write the pictures; {file name: what it shows}."""
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    kinds = [(s, "self") for s in rec.stacks] + ([("decoder", "cross")] if cross else [])
    for stack, kind in kinds:
        stem = f"{kind}_attention_{stack}" if kind == "self" else "cross_attention"
        opts = dict(kind=kind, stack=stack, tokens=tokens)
        plots.plot_attention(rec, out / f"{stem}.png", layers=layers, heads=heads, **opts)
        files[f"{stem}.png"] = f"{stack} {kind}-attention weights A, one heatmap per layer x head"
        chosen = layers if layers is not None else range(len(rec.records(kind, stack)))
        pairs = [(lay, h) for lay in chosen for h in heads] if heads else [(chosen[0], 0)]
        for lay, h in pairs:
            name = f"{stem}_layer{lay}_head{h}.png"
            plots.plot_head(rec, out / name, layer=lay, head=h, **opts)
            files[name] = f"{stack} {kind}-attention, layer {lay}, head {h}, enlarged with values"
    plots.plot_masks(rec, out / "masks.png", tokens=tokens)
    cross_mask = " + cross-attention" if "cross" in {r.kind for r in rec.attention} else ""
    files["masks.png"] = f"the masks applied: causal + padding{cross_mask} (blue = may attend)"
    for stack in rec.stacks:
        plots.plot_residual(rec, out / f"residual_{stack}.png", stack=stack, tokens=tokens)
        files[f"residual_{stack}.png"] = f"{stack} residual stream: ‖x‖ and ‖update‖ per sub-layer"
    if model.config.positional != "none":
        plots.plot_positional(model, out / "positional.png")
        files["positional.png"] = f"the {model.config.positional} positional-encoding matrix"
    return files


def _write_index(out: Path, files: dict[str, str], model: str, tokens, notes: list[str]) -> None:
    article = "an" if model[0] in "AEIOU" else "a"
    lines = [f"# Inside {article} {model}", ""]
    for stack, labels in tokens.items():
        lines.append(f"{stack} tokens: {labels}  ")
    lines += ["", "| file | shows |", "| --- | --- |"]
    lines += [f"| [{name}]({name}) | {what} |" for name, what in files.items()]
    if notes:
        lines += ["", "## Circuits", "", *notes]
    write_text(out / "index.md", "\n".join(lines) + "\n")  # replaces a link, never follows it


def _checked(arg: str, values: list[int] | None, n: int) -> list[int] | None:
    """The chosen layers or heads, each once (so at most n pictures per kind)."""
    if values is not None and max(values) >= n:
        raise ValueError(f"{arg} {max(values)} is out of range: allowed 0..{n - 1}")
    return None if values is None else list(dict.fromkeys(values))


def _stacks(model) -> list:
    """What holds the blocks: an encoder-decoder's two sides, else the model itself."""
    if isinstance(model, EncoderDecoder):
        return [model.encoder, model.decoder]
    return [model]
