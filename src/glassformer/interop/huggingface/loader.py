"""The public entry points: pick the converter for a class, build the other side, copy weights.

from_huggingface(hf_model)         loaded transformers model -> glassformer model
from_huggingface_dir(path)         local HF directory (config.json + weights) -> glassformer
to_huggingface(model)              glassformer model -> transformers model
huggingface_key_map(model)         {glassformer tensor: HF tensor(s)} for either side
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from ...models import DecoderLM, GlassformerModel
from ...models.budget import check_memory
from ...models.config import GRAPH_FIELDS
from ...nn.lora import LoRALinear
from ...structured import loads_json
from . import bart, bert, gpt2, llama
from .common import require_transformers, transfer
from .folder_checks import check_config_json, check_loading_report, check_splits, weight_names

__all__ = [
    "SUPPORTED",
    "from_huggingface",
    "from_huggingface_dir",
    "huggingface_dir_class",
    "huggingface_key_map",
    "to_huggingface",
]

_CONVERTERS: dict[str, ModuleType] = {
    name: module for module in (gpt2, bert, bart, llama) for name in module.HF_CLASSES
}
SUPPORTED: tuple[str, ...] = tuple(_CONVERTERS)  # the Hugging Face classes that convert
_BY_MODEL_TYPE = {  # the class to load when config.json names no architectures (as AutoModel*)
    "gpt2": "GPT2LMHeadModel",
    "bert": "BertModel",
    "bart": "BartForConditionalGeneration",
    "llama": "LlamaForCausalLM",
}


_FOLDERS = object()  # tokenizer=: the one the model's folder holds


def from_huggingface(hf_model: Any, *, tokenizer: Any = _FOLDERS) -> GlassformerModel:
    """The glassformer model equal to a loaded ``transformers`` model, same weights, dtype,
    device and train/eval mode. ``config.extra["converted_from"]`` names the source class.

    ``tokenizer``, attached to the model (``model.set_tokenizer``): a glassformer tokenizer or
    a ``transformers`` fast tokenizer; by default the one in the local folder the model was
    loaded from (``hf_model.name_or_path``, read by ``load_hf_tokenizer``), none when that is
    no local folder or holds no tokenizer; None attaches none."""
    require_transformers()
    if tokenizer is _FOLDERS:
        tokenizer = _folder_tokenizer(getattr(hf_model, "name_or_path", None))
    name = type(hf_model).__name__
    module = _converter(name)
    cls, config = module.config_from_hf(hf_model)
    param = next(hf_model.parameters())
    check_memory(config, cls, device=param.device, via_cpu=False)  # room for the copy
    with torch.device(param.device):
        model = cls(config).to(param.dtype)
    transfer(module.rules(config, name), hf_model, model, to_glass=True, where=name)
    if tokenizer is not None:
        model.set_tokenizer(tokenizer)
    return model.train(hf_model.training)


def _folder_tokenizer(folder: Any) -> Any:
    """The tokenizer of a local Hugging Face folder, None when ``folder`` is none."""
    if not folder or not Path(str(folder)).is_dir():
        return None
    from ...tokenizers import load_hf_tokenizer

    return load_hf_tokenizer(folder)


def from_huggingface_dir(
    path: str | Path, *, architecture: str | None = None, tokenizer: Any = _FOLDERS
) -> GlassformerModel:
    """Load a local Hugging Face model directory (``config.json`` + safetensors, as written by
    ``save_pretrained``) and convert it, with the directory's tokenizer attached
    (``load_hf_tokenizer``: ``tokenizer.json``, or GPT-2's ``vocab.json`` + ``merges.txt``;
    none when it holds neither; ``tokenizer=`` attaches another, None none). Nothing is
    downloaded (``local_files_only=True``). ``architecture`` overrides the class named in
    config.json's ``architectures`` (without either, the ``model_type`` decides: gpt2, bert
    (BertModel), bart, llama). A damaged folder or weights that do not match config.json are
    refused in a ValueError; weights the class leaves unused, or a head ``architecture`` adds,
    give a ``WeightsNote`` warning (folder_checks.py)."""
    path = Path(path)
    name, meta, folder_classes = _architecture(path, architecture)
    config_file = path / "config.json"
    transformers = require_transformers()
    module, hf_cls = _CONVERTERS[name], getattr(transformers, name)
    check_config_json(config_file, meta, module.CONFIG_SPEC)  # before anything is built
    stored = weight_names(path)  # each safetensors header read: a damaged file fails here
    options = getattr(module, "load_options", lambda *_: {})(name, stored)  # BERT's pooler
    hf_config = _checked_config(hf_cls, module, path, options)
    if tokenizer is _FOLDERS:  # before the weights: a bad tokenizer fails fast
        tokenizer = _folder_tokenizer(path)
    try:
        with _quiet(transformers):  # its report of what it did not load: checked below
            hf_model, info = hf_cls.from_pretrained(
                path,
                config=hf_config,
                local_files_only=True,
                output_loading_info=True,
                ignore_mismatched_sizes=True,  # reported in info, refused below
                **options,
            )
    except (MemoryError, torch.OutOfMemoryError):
        raise
    except Exception as err:  # transformers' errors come in many types: one line each
        raise ValueError(f"{path}: cannot load it as {name}: {_one_line(err)}") from None
    check_loading_report(path, hf_model, info, own_class=name in folder_classes)
    return from_huggingface(hf_model.eval(), tokenizer=tokenizer)


def huggingface_dir_class(path: str | Path) -> tuple[type[GlassformerModel], dict[str, Any]]:
    """The glassformer class a Hugging Face model directory converts to, and its parsed
    ``config.json`` with its sizes checked, read without the weights (ValueError as
    ``from_huggingface_dir``)."""
    path = Path(path)
    name, meta, _ = _architecture(path, None)
    module = _converter(name)
    check_config_json(path / "config.json", meta, module.CONFIG_SPEC)
    return module.HF_CLASSES[name], meta


def _architecture(
    path: Path, architecture: str | None
) -> tuple[str, dict[str, Any], list[str]]:
    """The Hugging Face class that ``from_huggingface_dir`` loads from ``path``, the parsed
    config.json and the classes it names."""
    config_file = path / "config.json"
    if not path.is_dir():
        raise ValueError(f"{path}: not a Hugging Face model directory (no such directory)")
    if not config_file.is_file():
        raise ValueError(f"{path}: not a Hugging Face model directory (no config.json)")
    meta = loads_json(config_file.read_bytes(), str(config_file))
    if not isinstance(meta, dict):
        raise ValueError(f"{config_file}: not a Hugging Face model config (not a JSON object)")
    if meta.get("format") == "glassformer-model":
        raise ValueError(
            f"{path}: a glassformer checkpoint, not a Hugging Face one; load it with "
            "glassformer.models.load_model"
        )
    folder_classes = list(meta.get("architectures") or [])
    if not folder_classes and meta.get("model_type") in _BY_MODEL_TYPE:  # no architectures
        folder_classes = [_BY_MODEL_TYPE[meta["model_type"]]]
    names = [architecture] if architecture else folder_classes
    name = next((n for n in names if n in _CONVERTERS), None)
    if name is None:
        raise ValueError(
            f"{path}: architectures={names} (model_type={meta.get('model_type')!r}) is not "
            f"supported; supported: {list(SUPPORTED)}"
        )
    return name, meta, folder_classes


def _checked_config(hf_cls: Any, module: ModuleType, path: Path, options: dict) -> Any:
    """transformers' config of the folder at ``path``, checked before any weight is read: its
    values with transformers' defaults filled in, then the converter's refusals on a model
    built on the "meta" device (shapes only, no memory)."""
    config_file = path / "config.json"
    try:
        hf_config = hf_cls.config_class.from_pretrained(path, local_files_only=True)
        check_splits(config_file, hf_config, module.CONFIG_SPEC)
        with torch.device("meta"):
            skeleton = hf_cls(hf_config, **options)
    except Exception as err:  # transformers' own validation, of any type
        shown = _one_line(err)
        where = "" if shown.startswith(str(config_file)) else f"{config_file}: "
        raise ValueError(f"{where}{shown}") from None
    module.config_from_hf(skeleton)
    return hf_config


def _one_line(err: BaseException) -> str:
    """An error's message on one line (transformers' span several)."""
    return " ".join(str(err).split()) or type(err).__name__


@contextlib.contextmanager
def _quiet(transformers: Any) -> Iterator[None]:
    """transformers' warnings off (its loading report: folder_checks.py refuses or notes)."""
    logging = transformers.utils.logging
    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)


def to_huggingface(model: GlassformerModel, *, architecture: str | None = None) -> Any:
    """The ``transformers`` model equal to a glassformer model (same weights, dtype, device,
    mode). ``architecture`` picks the HF class where several fit (DecoderLM: GPT2LMHeadModel or
    LlamaForCausalLM; default: the class it was converted from, else by its positions)."""
    if any(isinstance(m, LoRALinear) for m in model.modules()):
        raise ValueError(
            "to_huggingface: the model has LoRA layers (lora_A, lora_B), which Hugging Face's "
            "classes lack; merge them into the weights first: "
            "glassformer.finetune.merge_lora(model)"
        )
    transformers = require_transformers()
    name = _hf_class_for(model, architecture)
    _require_dense(model.config, name)
    module = _CONVERTERS[name]
    param = next(model.parameters())
    hf_model = module.build_hf(model, name, transformers).to(param.device, param.dtype)
    transfer(module.rules(model.config, name), model, hf_model, to_glass=False, where=name)
    return hf_model.train(model.training)


def _require_dense(config: Any, where: str) -> None:
    """The Hugging Face classes attend to every key with separate W^Q, W^K: refuse a model
    with attention graphs or other attention scores."""
    _require_separate(config, where)
    for field in GRAPH_FIELDS:
        if any(g is not None for g in config.layer_graphs(field)):
            raise ValueError(
                f"{where} cannot express the glassformer option {field}="
                f"{getattr(config, field)!r}; it needs {field}=None (dense attention)"
            )


def _require_separate(config: Any, where: str) -> None:
    """Refuse attention_scores other than "separate": no HF class has them."""
    if config.attention_scores != "separate":
        raise ValueError(
            f"{where} cannot express the glassformer option attention_scores="
            f"{config.attention_scores!r} (its attention has separate query and key "
            "projections); it needs attention_scores='separate'"
        )


def huggingface_key_map(model: Any, *, architecture: str | None = None) -> dict[str, tuple]:
    """{glassformer tensor name: Hugging Face tensor name(s)} for a model of either library
    (several HF names: stacked by rows, e.g. gate/up -> fc1; one HF name for several
    glassformer tensors: equal blocks of its rows, e.g. GPT-2's c_attn -> q_proj, k_proj,
    v_proj)."""
    if isinstance(model, GlassformerModel):
        name, config = _hf_class_for(model, architecture), model.config
        _require_separate(config, name)
    else:
        name = type(model).__name__
        _, config = _converter(name).config_from_hf(model)
    return {r.glass: r.hf for r in _CONVERTERS[name].rules(config, name)}


def _converter(name: str) -> ModuleType:
    if name not in _CONVERTERS:
        raise ValueError(
            f"Hugging Face class {name!r} is not supported; supported: {list(SUPPORTED)}"
        )
    return _CONVERTERS[name]


def _hf_class_for(model: GlassformerModel, architecture: str | None) -> str:
    """The HF class a glassformer model converts to."""
    if not isinstance(model, GlassformerModel):
        raise ValueError(f"to_huggingface needs a glassformer model, got {type(model).__name__}")
    fits = [n for n, m in _CONVERTERS.items() if m.HF_CLASSES[n] is type(model)]
    if not fits:
        raise ValueError(f"{type(model).__name__} has no Hugging Face counterpart here")
    if architecture is not None:
        if architecture not in fits:
            raise ValueError(
                f"architecture={architecture!r} cannot hold a {type(model).__name__}; "
                f"choose one of {fits}"
            )
        return architecture
    source = model.config.extra.get("converted_from")
    if source in fits:
        return source
    if isinstance(model, DecoderLM):
        return "LlamaForCausalLM" if model.config.positional == "rotary" else "GPT2LMHeadModel"
    return fits[0]
