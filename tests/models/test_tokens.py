"""The model's tokenizer: attached by load_model and the Hugging Face loaders, missing (and
said so) on a model built from a config; to_tokens / to_str_tokens / to_single_token with a
glassformer tokenizer and with a transformers one. TransformerLens parity:
tests/reference/test_transformer_lens_tokens.py."""

import pytest
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from glassformer import load_model
from glassformer.interop.huggingface import from_huggingface
from glassformer.models import DecoderLM
from glassformer.presets import preset
from glassformer.tokenizers import CharTokenizer, HFTokenizer

TEXT = "to be or not to be"


def char_model(max_len: int = 16) -> DecoderLM:
    tok = CharTokenizer().train(TEXT)
    torch.manual_seed(0)
    config = preset(
        "tiny", vocab_size=tok.vocab_size, d_model=32, n_head=4, n_layer=1, max_len=max_len
    )
    return DecoderLM(config).set_tokenizer(tok)


def test_a_model_built_from_a_config_has_no_tokenizer_and_says_how_to_attach_one():
    model = DecoderLM(preset("tiny", vocab_size=40, d_model=32, n_head=4, n_layer=1))
    assert model.tokenizer is None
    for call in (
        lambda: model.to_tokens("to be"),
        lambda: model.to_str_tokens([1, 2]),
        lambda: model.to_single_token("t"),
    ):
        with pytest.raises(ValueError, match=r"DecoderLM has no tokenizer .*model\.set_tokenizer"):
            call()


def test_to_tokens_prepends_bos_and_pads_with_the_tokenizers_pad():
    model = char_model()
    tok = model.tokenizer
    assert model.default_prepend_bos
    assert model.to_tokens("to be").tolist() == [[tok.bos_id, *tok.encode("to be")]]
    assert model.to_tokens("to be", prepend_bos=False).tolist() == [tok.encode("to be")]
    both = model.to_tokens(["to", "to be"])
    assert both.dtype == torch.long and both.shape == (2, 6)
    assert both[0].tolist() == [tok.bos_id, *tok.encode("to"), *[tok.pad_id] * 3]
    left = model.to_tokens(["to", "to be"], padding_side="left")
    assert left[0].tolist() == [*[tok.pad_id] * 3, tok.bos_id, *tok.encode("to")]
    assert model.to_tokens("<EOS>", prepend_bos=False).tolist() == [[tok.eos_id]]


def test_to_str_tokens_and_to_single_token():
    model = char_model()
    assert model.to_str_tokens("to be") == ["<BOS>", "t", "o", " ", "b", "e"]
    assert model.to_str_tokens(["to", "be"], prepend_bos=False) == [["t", "o"], ["b", "e"]]
    ids = model.to_tokens(["to", "be"])
    assert model.to_str_tokens(ids) == [["<BOS>", "t", "o"], ["<BOS>", "b", "e"]]
    assert model.to_str_tokens(ids[:1]) == ["<BOS>", "t", "o"]
    assert model.to_str_tokens(ids[0].tolist()) == ["<BOS>", "t", "o"]
    assert model.to_single_token("b") == model.tokenizer.encode("b")[0]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: m.to_tokens(3), TypeError, "input is int; allowed a str or a list of str"),
        (lambda m: m.to_tokens(["a", 3]), TypeError, "input is list"),
        (lambda m: m.to_tokens([]), ValueError, "input is an empty list"),
        (lambda m: m.to_tokens("to", padding_side="up"), ValueError, "padding_side='up'"),
        (lambda m: m.to_tokens("to", "yes"), TypeError, "prepend_bos='yes'; allowed True"),
        (lambda m: m.to_tokens(["t", TEXT]), ValueError, "text 1 is 19 tokens; .* max_len=16"),
        (lambda m: m.to_str_tokens(torch.zeros(3)), ValueError, "dtype torch.float32"),
        (lambda m: m.to_str_tokens(2.5), TypeError, "input is float"),
        (lambda m: m.to_str_tokens([99]), ValueError, "token id 99 is out of range"),
        (lambda m: m.to_single_token("to"), ValueError, r"'to' is 2 tokens \(\['t', 'o'\]\)"),
        (lambda m: m.to_single_token(""), ValueError, "'' is 0 tokens"),
        (lambda m: m.to_single_token(5), TypeError, "string is int"),
        (lambda m: m.set_tokenizer("gpt2"), TypeError, "tokenizer is a str; allowed a glass"),
    ],
)
def test_bad_input_is_refused_with_a_message(call, error, words):
    with pytest.raises(error, match=words):
        call(char_model())


def test_set_tokenizer_refuses_ids_the_model_does_not_embed():
    tok = CharTokenizer().train(TEXT)
    model = DecoderLM(preset("tiny", vocab_size=6, d_model=32, n_head=4, n_layer=1))
    with pytest.raises(ValueError, match=f"has {tok.vocab_size} tokens but the model's vocab"):
        model.set_tokenizer(tok)
    assert model.tokenizer is None


def test_load_model_attaches_the_saved_tokenizer(tmp_path):
    model = char_model()
    model.save_pretrained(tmp_path)
    loaded = load_model(tmp_path)
    assert loaded.to_tokens(["to be", "or"]).tolist() == model.to_tokens(["to be", "or"]).tolist()


def _byte_bpe_folder(folder):
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(
        [TEXT] * 4,
        trainers.BpeTrainer(
            vocab_size=280,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=t, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    fast.save_pretrained(folder)
    config = transformers.GPT2Config(
        vocab_size=t.get_vocab_size(), n_positions=32, n_embd=32, n_layer=1, n_head=2
    )
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return fast


def test_from_huggingface_attaches_the_folders_or_the_given_tokenizer(tmp_path):
    """The model's folder (name_or_path) gives its tokenizer; a transformers tokenizer given
    is converted; None attaches none."""
    transformers.logging.set_verbosity_error()
    fast = _byte_bpe_folder(tmp_path)
    hf = transformers.GPT2LMHeadModel.from_pretrained(tmp_path, local_files_only=True).eval()
    want = [[fast.bos_token_id, *fast(" to be")["input_ids"]]]
    model = from_huggingface(hf)
    assert isinstance(model.tokenizer, HFTokenizer)
    assert model.to_tokens(" to be").tolist() == want
    hf.name_or_path = "not/a/folder"
    assert from_huggingface(hf).tokenizer is None
    given = from_huggingface(hf, tokenizer=fast)
    assert given.to_tokens(" to be").tolist() == want
    assert given.to_str_tokens(" to be") == [fast.decode([i]) for i in want[0]]
    assert from_huggingface(hf, tokenizer=None).tokenizer is None
