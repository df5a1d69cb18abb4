"""Weight conversion between glassformer and other libraries.

torch.nn (``torch_nn``): ``from_torch`` turns ``nn.MultiheadAttention`` and the
``nn.Transformer*`` modules into glassformer modules that take the same call arguments;
``to_torch`` goes back where torch.nn can express the module; ``torch_key_map``
(``torch_keys``) names each torch.nn weight's glassformer key.
"""

from .torch_adapters import (
    TorchStyleDecoderLayer,
    TorchStyleEncoderLayer,
    TorchStyleMultiheadAttention,
)
from .torch_keys import torch_key_map
from .torch_masks import glassformer_mask
from .torch_nn import from_torch, to_torch
from .torch_stacks import TorchStyleDecoder, TorchStyleEncoder, TorchStyleTransformer

__all__ = [
    "TorchStyleDecoder",
    "TorchStyleDecoderLayer",
    "TorchStyleEncoder",
    "TorchStyleEncoderLayer",
    "TorchStyleMultiheadAttention",
    "TorchStyleTransformer",
    "from_torch",
    "glassformer_mask",
    "to_torch",
    "torch_key_map",
]
