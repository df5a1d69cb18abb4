"""``glassformer inspect --circuits``: the circuits view of one prediction ("Brief Notes on
Transformers": the residual stream as a sum of heads and feed-forwards, each head
h(x) = A(x) · x · S with its OV matrix S and QK matrix Y; Elhage et al. (2021), "A Mathematical
Framework for Transformer Circuits"), drawn with glassformer.circuits:

    attribution_heads.png        each head's direct share of the prediction (layers × heads)
    logit_lens.png               the top tokens read from each layer's residual stream
    ov_singular_values_*.png     the singular values of each head's S = W_V W_O
    qk_singular_values_*.png     the singular values of each head's Y = W_Q W_Kᵀ / √d_k
    patching_residual.png        activation patching of the stream, layers × positions
    patching_heads.png           activation patching of each head's output, layers × heads

The prediction is the logit of --answer (default: the model's top token at --position, or its
class) or, with --wrong, the difference of the two logits (inspect_answer.py). Patching runs
the model on a corrupted input, --corrupt TEXT (as many tokens as --text) or by default the
input's ordinary tokens in a fixed shuffled order (seed 0, special tokens kept in place), and
restores one activation at a time from the clean run; the metric is normalised to 1 = clean,
0 = corrupted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from torch import Tensor

from .. import circuits
from ..inspect import circuit_plots as plots
from ..models import EncoderDecoder, EncoderModel
from ..models.heads import ClassificationHead
from .inspect_answer import Prediction, analysed, answer_pair, chosen_tokens

__all__ = ["check_arguments", "check_model", "chosen_tokens", "draw_circuits"]

SHUFFLE_SEED = 0
TOP_TERMS = 8  # the largest shares listed in index.md


def check_arguments(args: argparse.Namespace) -> None:
    """--answer, --wrong and --corrupt only mean something with --circuits."""
    for flag in ("answer", "wrong", "corrupt"):
        if getattr(args, flag) is not None and not args.circuits:
            raise ValueError(f"--{flag} is an option of --circuits: add --circuits")


def check_model(model, path: Path) -> None:
    """Refuse a model without a head (a BertModel): the circuits view analyses a prediction,
    and such a model predicts nothing."""
    if type(model) is EncoderModel:
        converted = model.config.extra.get("converted_from")
        what = f"a Hugging Face {converted} (an EncoderModel)" if converted else "an EncoderModel"
        raise ValueError(
            f"--circuits analyses a prediction, but --checkpoint {path} holds {what}: a body "
            "with no head, which predicts no token or class; allowed a model with an output "
            "layer (language model, masked LM, classifier, encoder-decoder); without --circuits "
            "inspect draws its attention, masks and residual stream"
        )


def draw_circuits(
    model, kwargs: dict[str, Tensor], tokens, position: int, chosen, corrupt_ids, out: Path
) -> tuple[dict[str, str], list[str]]:
    """Write the circuit pictures into ``out``; ({file name: what it shows}, lines for
    index.md). ``kwargs`` are the model's inputs, ``tokens`` each stack's token labels,
    ``position`` the position analysed in the readout stack, ``chosen`` the ids of --answer
    and --wrong (chosen_tokens), ``corrupt_ids`` the encoded --corrupt text or None."""
    files: dict[str, str] = {}
    seq2seq = isinstance(model, EncoderDecoder)
    stack = "encoder" if isinstance(model, EncoderModel) else "decoder"
    output, cache = circuits.circuit_cache(model, **kwargs)
    pred = analysed(model, output, stack, position, *chosen)
    lines = [f"Analysed: {pred.describe()}, value {float(pred.metric(output)):.4f}.", ""]

    try:
        dla = circuits.logit_attribution(
            cache, answer_pair(pred), position=pred.position or 0, **_pool(kwargs)
        )
    except ValueError as err:  # a readout that is not linear (BERT's MLM transform, a pooler)
        lines += [f"No direct attribution: {err}", ""]
    else:
        readout = "classifier" if isinstance(model, ClassificationHead) else "unembedding"
        for kind in ("self", "cross") if seq2seq else ("self",):
            stem = "attribution_heads" if kind == "self" else "attribution_cross_heads"
            plots.plot_head_attribution(
                dla.heads(kind)[..., 0], out / f"{stem}.png", title=f"{kind}-attention heads"
            )
            files[f"{stem}.png"] = (
                f"each {stack} {kind}-attention head's direct share of {pred.describe()} "
                f"(through the final norm, its scale frozen, and the {readout})"
            )
        lines += _top_terms(dla)

    if not isinstance(model, ClassificationHead):  # a classifier has no unembedding to read
        lens = circuits.logit_lens(cache, k=5, position=pred.position)
        rows = [
            [(model.tokenizer.id_to_token(i), p) for i, p in zip(ids, probs, strict=True)]
            for ids, probs in zip(lens.ids[:, 0].tolist(), lens.probs[:, 0].tolist(), strict=True)
        ]
        plots.plot_logit_lens(rows, out / "logit_lens.png", row_labels=lens.labels)
        files["logit_lens.png"] = (
            f"logit lens at {stack} position {pred.position}: the top 5 tokens read from the "
            "stream entering block 0 (embed) and after each block"
        )

    files |= _spectra(model, out)
    files |= _patching(model, kwargs, tokens, pred, corrupt_ids, out, lines)
    return files, lines


def _pool(kwargs: dict[str, Tensor]) -> dict[str, Tensor]:
    mask = kwargs.get("attention_mask")
    return {} if mask is None else {"attention_mask": mask}


def _top_terms(dla) -> list[str]:
    """A table of the largest direct shares, for index.md."""
    shares = dla.terms.values[:, 0]  # (N,)
    order = shares.abs().argsort(descending=True)[:TOP_TERMS].tolist()
    lines = ["| term | direct share |", "| --- | --- |"]
    lines += [f"| {dla.labels[i]} | {float(shares[i]):+.4f} |" for i in order]
    constants = float(dla.constants.sum()) if len(dla.constants) else 0.0
    lines += [
        "",
        f"All {len(shares)} terms sum to {float(shares.sum()):.4f}; with the constants "
        f"({constants:+.4f}) that is the model's value {float(dla.logit[0]):.4f}.",
        "",
    ]
    return lines


def _spectra(model, out: Path) -> dict[str, str]:
    """The singular values of every head's OV and QK matrix, per stack and kind."""
    files = {}
    stacks = ["encoder", "decoder"] if isinstance(model, EncoderDecoder) else [None]
    kinds = [(s, "self") for s in stacks] + (
        [("decoder", "cross")] if isinstance(model, EncoderDecoder) else []
    )
    for stack, kind in kinds:
        where = stack or ("encoder" if isinstance(model, EncoderModel) else "decoder")
        suffix = where if kind == "self" else "cross"
        for name, matrix, formula in (
            ("ov", circuits.ov_matrix, "S = W_V W_O"),
            ("qk", circuits.qk_matrix, "Y = W_Q W_Kᵀ / √d_k"),
        ):
            with torch.no_grad():
                sigma = matrix(model, None, kind=kind, stack=stack).singular_values  # (L, H, D)
            file = f"{name}_singular_values_{suffix}.png"
            title = f"{where} {kind}-attention: singular values of each head's {formula}"
            plots.plot_singular_values(sigma, out / file, title=title)
            files[file] = f"the singular values of each {where} {kind}-attention head's {formula}"
    return files


def _patching(model, kwargs, tokens, pred: Prediction, corrupt_ids, out: Path, lines):
    """Patch the stream (layers × positions) and each head (layers × heads) from the clean run
    into the corrupted one."""
    clean_ids = kwargs["input_ids"]
    if corrupt_ids is None:
        keep = set(getattr(model.tokenizer, "special_ids", ())) | {model.config.pad_id}
        corrupt_ids = _shuffled(clean_ids, kwargs.get("attention_mask"), keep)
        how = f"the input's ordinary tokens shuffled (seed {SHUFFLE_SEED})"
    else:
        how = "--corrupt"
    corrupted = {**kwargs, "input_ids": corrupt_ids}
    with torch.no_grad():
        clean_value = float(pred.metric(circuits.circuit_cache(model, **kwargs)[0]))
        corrupted_value = float(pred.metric(circuits.circuit_cache(model, **corrupted)[0]))
    stack = "encoder" if isinstance(model, EncoderDecoder) else None  # where the input differs
    labels = tokens["encoder" if isinstance(model, EncoderDecoder) else pred.stack]
    corrupted_tokens = [model.tokenizer.id_to_token(i) for i in corrupt_ids[0].tolist()]
    lines += [
        f"Patching: corrupted input = {how}: {corrupted_tokens}; the metric is "
        f"{clean_value:.4f} on the clean input and {corrupted_value:.4f} on the corrupted one.",
        "",
    ]
    normalize = clean_value != corrupted_value
    if not normalize:
        lines += ["The two runs give the same metric: the patching maps show raw values.", ""]
    scale = "1 = the clean run, 0 = the corrupted run" if normalize else "raw metric"
    grid = circuits.patch_residual(
        model, kwargs, corrupted, pred.metric, stack=stack, normalize=normalize
    )
    plots.plot_patching(
        grid, out / "patching_residual.png", x_labels=labels, title=f"patched stream ({scale})"
    )
    files = {
        "patching_residual.png": f"the metric with one layer's stream (resid_pre) at one "
        f"{stack or pred.stack} position restored from the clean run ({scale})"
    }
    kind = "cross" if isinstance(model, EncoderDecoder) else "self"
    heads = circuits.patch_heads(
        model, kwargs, corrupted, pred.metric, kind=kind, normalize=normalize
    )
    plots.plot_patching(
        heads, out / "patching_heads.png", over="head", title=f"patched heads ({scale})"
    )
    files["patching_heads.png"] = (
        f"the metric with one {pred.stack} {kind}-attention head's output (z, every position) "
        f"restored from the clean run ({scale})"
    )
    return files


def _shuffled(ids: Tensor, mask: Tensor | None, keep: set[int]) -> Tensor:
    """``ids`` (1, T) with its ordinary tokens (real, and not in ``keep``: the special
    tokens) in a fixed random order: the default corrupted input."""
    row = ids[0].tolist()
    real = len(row) if mask is None else int(mask[0].sum())
    movable = [t for t in range(real) if row[t] not in keep]
    generator = torch.Generator().manual_seed(SHUFFLE_SEED)
    order = [movable[i] for i in torch.randperm(len(movable), generator=generator).tolist()]
    new = list(row)
    for target, source in zip(movable, order, strict=True):
        new[target] = row[source]
    return torch.tensor([new], device=ids.device)
