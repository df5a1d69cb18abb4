"""Two-way weight conversion with Hugging Face ``transformers`` (an optional dependency:
``pip install glassformer[test]`` or ``pip install transformers``).

    from glassformer.interop.huggingface import from_huggingface_dir, to_huggingface

    model = from_huggingface_dir("path/to/hf-checkpoint")   # GPT-2, BERT, BART, Llama
    model.save_pretrained("glass-checkpoint")                # glassformer's own format
    hf_model = to_huggingface(model)                         # and back

Supported classes (``SUPPORTED``) and their glassformer counterparts:

    GPT2LMHeadModel                 DecoderLM       (gpt2.py)
    GPT2ForSequenceClassification   DecoderClassifier (gpt2.py)
    BertModel                       EncoderModel    (bert.py)
    BertForMaskedLM                 EncoderMLM      (bert.py)
    BertForSequenceClassification   EncoderClassifier (bert.py)
    BartForConditionalGeneration    EncoderDecoder  (bart.py)
    LlamaForCausalLM                DecoderLM       (llama.py)

Each module's docstring lists the tensor-name mapping; ``huggingface_key_map`` returns it.
"""

from .loader import (
    SUPPORTED,
    from_huggingface,
    from_huggingface_dir,
    huggingface_dir_class,
    huggingface_key_map,
    to_huggingface,
)

__all__ = [
    "SUPPORTED",
    "from_huggingface",
    "from_huggingface_dir",
    "huggingface_dir_class",
    "huggingface_key_map",
    "to_huggingface",
]
