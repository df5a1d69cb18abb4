"""Inference: text generation with a KV cache, sampling and beam search. Prediction for the
encoder tasks (classification, fill-mask) is glassformer.predict.

    from glassformer.generation import GenerationConfig, generate, generate_text

    out = generate(model, [[1, 17, 42], [1, 5]], max_new_tokens=20, temperature=0.8, top_k=40,
                   seed=0)                        # left-padded batch, repeatable sampling
    out.tokens, out.finish_reasons, out.sequences
    generate(model, ids, num_beams=4, length_penalty=0.6, eos_id=2)          # beam search
    generate_text(model, tokenizer, "To be, or not", temperature=0)            # greedy text
    for piece in stream_text(model, tokenizer, "ROMEO:", seed=1): print(piece, end="")

Modules: config (GenerationConfig), logits (temperature, top-k, top-p), decoding (prefill/step
sessions over the KV cache), sampling (greedy and sampling loop, DInference), beam (beam
search), stopping (EOS, stop strings), inputs (padding), api (the entry points).
"""

from .api import encode_prompt, generate, generate_text, stream, stream_text
from .beam import beam_search
from .config import GenerationConfig
from .decoding import DecoderSession, Seq2SeqSession, Session
from .logits import apply_temperature, choose_next, top_k_filter, top_p_filter, warp_logits
from .outputs import GenerationOutput

__all__ = [
    "DecoderSession",
    "GenerationConfig",
    "GenerationOutput",
    "Seq2SeqSession",
    "Session",
    "apply_temperature",
    "beam_search",
    "choose_next",
    "encode_prompt",
    "generate",
    "generate_text",
    "stream",
    "stream_text",
    "top_k_filter",
    "top_p_filter",
    "warp_logits",
]
