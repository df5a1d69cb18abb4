"""Adapters for torch.nn's stacks: ``TransformerEncoder``, ``TransformerDecoder`` and
``Transformer``, called with torch.nn's arguments on glassformer's ``Encoder`` / ``Decoder``.

See ``torch_adapters`` for the conventions and the (documented) differences from torch.nn.
"""

from __future__ import annotations

from torch import Tensor, nn

from ..nn.transformer import Decoder, Encoder
from .torch_adapters import TorchStyle, decode, encode

__all__ = ["TorchStyleDecoder", "TorchStyleEncoder", "TorchStyleTransformer"]


class TorchStyleEncoder(TorchStyle):
    """``torch.nn.TransformerEncoder``'s call on a glassformer ``Encoder``.

    ``enable_nested_tensor`` and ``mask_check`` are kept only to rebuild the torch.nn module
    (``to_torch``); glassformer never converts to nested tensors.
    """

    module: Encoder

    def __init__(
        self,
        module: Encoder,
        batch_first: bool = False,
        *,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__(module, batch_first)
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        padding = src_key_padding_mask
        return encode(self.module, self.batch_first, src, mask, padding, is_causal)


class TorchStyleDecoder(TorchStyle):
    """``torch.nn.TransformerDecoder``'s call on a glassformer ``Decoder``."""

    module: Decoder

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        masks = (tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)
        first = self.batch_first
        return decode(self.module, first, tgt, memory, masks, tgt_is_causal, memory_is_causal)


class TorchStyleTransformer(TorchStyle):
    """``torch.nn.Transformer``'s call on a glassformer ``Encoder`` and ``Decoder``
    (Phuong & Hutter's Algorithm 8, EDTransformer, without embeddings and unembedding).

    ``.module`` is a ModuleDict {"encoder": Encoder, "decoder": Decoder}, also reachable as
    ``.encoder`` and ``.decoder``.
    """

    module: nn.ModuleDict

    def __init__(
        self,
        encoder: Encoder,
        decoder: Decoder,
        batch_first: bool = False,
        *,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__(nn.ModuleDict({"encoder": encoder, "decoder": decoder}), batch_first)
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    @property
    def encoder(self) -> Encoder:
        return self.module["encoder"]

    @property
    def decoder(self) -> Decoder:
        return self.module["decoder"]

    generate_square_subsequent_mask = staticmethod(nn.Transformer.generate_square_subsequent_mask)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        if src.dim() != tgt.dim():
            raise ValueError(
                f"src and tgt must both be batched (3-D) or unbatched (2-D), got shapes "
                f"{tuple(src.shape)} and {tuple(tgt.shape)}"
            )
        names = ("src", "src_mask", "src_key_padding_mask", "src_is_causal")
        first = self.batch_first
        memory = encode(
            self.encoder, first, src, src_mask, src_key_padding_mask, src_is_causal, names
        )
        masks = (tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)
        return decode(self.decoder, first, tgt, memory, masks, tgt_is_causal, memory_is_causal)
