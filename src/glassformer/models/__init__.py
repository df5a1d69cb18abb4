"""The three families of the notes, assembled only from glassformer.nn components."""

from .base import GlassformerModel
from .checkpoint import load_pretrained as load_model
from .decoder import DecoderLM
from .decoder_classifier import DecoderClassifier
from .encoder import EncoderClassifier, EncoderMLM, EncoderModel
from .encoder_decoder import EncoderDecoder
from .outputs import IGNORE_INDEX, ModelOutput
from .registry import ARCHITECTURES

__all__ = [
    "ARCHITECTURES",
    "IGNORE_INDEX",
    "DecoderClassifier",
    "DecoderLM",
    "EncoderClassifier",
    "EncoderDecoder",
    "EncoderMLM",
    "EncoderModel",
    "GlassformerModel",
    "ModelOutput",
    "load_model",
]
