"""``Run.plan(..., init_from=PATH)``: a run starts from a pre-trained model, a Hugging Face
directory (GPT-2, Llama, BERT, BART built offline from a small config and written by
``save_pretrained``) or a glassformer run; the model before any step is the pre-trained one,
new heads are new, and the run trains and resumes as any other."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from glassformer import load_model
from glassformer.models import DecoderClassifier, DecoderLM, EncoderClassifier
from glassformer.runs import Run, RunError
from glassformer.tokenizers import BPETokenizer
from glassformer.training.layout import latest_checkpoint

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()

TEXT = "the cat sat on the mat. a dog ran in the park.\n" * 40
ROWS = "label,text\n" + "".join(
    f"pos,good fun day {i}\n" if i % 2 else f"neg,bad sad night {i}\n" for i in range(48)
)
PAIRS = "".join(f"the cat {i}\tthe dog {i}\n" for i in range(48))
SMALL = {"train": {"batch_size": 4, "log_every": 1, "eval_batches": 1}}


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Data files and a byte-level BPE tokenizer (vocab.json + merges.txt) for the HF dirs."""
    root = tmp_path_factory.mktemp("data")
    paths = {"txt": root / "t.txt", "csv": root / "c.csv", "tsv": root / "p.tsv"}
    for path, text in zip(paths.values(), (TEXT, ROWS, PAIRS), strict=True):
        path.write_text(text, encoding="utf-8")
    tokenizer = BPETokenizer().train([TEXT, ROWS, PAIRS], vocab_size=300)
    paths["tokenizer"] = root / "tokenizer"
    tokenizer.save_gpt2_files(paths["tokenizer"])
    return paths


def hf_model(name: str, vocab: int):
    """A small random Hugging Face model (dropout on, as pre-trained models have it)."""
    torch.manual_seed(0)
    if name == "gpt2":
        c = transformers.GPT2Config(
            n_layer=2, n_embd=32, n_head=4, vocab_size=vocab, n_positions=64
        )
        return transformers.GPT2LMHeadModel(c)
    if name == "llama":
        c = transformers.LlamaConfig(
            num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=48, vocab_size=vocab, max_position_embeddings=64,
        )  # fmt: skip
        return transformers.LlamaForCausalLM(c)
    if name == "bert":
        c = transformers.BertConfig(
            num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
            vocab_size=vocab, max_position_embeddings=64, pad_token_id=0,
        )  # fmt: skip
        return transformers.BertModel(c)
    c = transformers.BartConfig(
        encoder_layers=1, decoder_layers=1, d_model=32, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, vocab_size=vocab,
        max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=2, forced_eos_token_id=None,
    )  # fmt: skip
    return transformers.BartForConditionalGeneration(c)


@pytest.fixture(scope="module")
def hf_dirs(files, tmp_path_factory) -> dict[str, Path]:
    """Each small HF model saved by ``save_pretrained``, with the tokenizer's files."""
    vocab = BPETokenizer.from_gpt2_files(
        files["tokenizer"] / "vocab.json", files["tokenizer"] / "merges.txt"
    ).vocab_size
    root = tmp_path_factory.mktemp("hf")
    dirs = {}
    for name in ("gpt2", "llama", "bert", "bart"):
        dirs[name] = root / name
        hf_model(name, vocab).save_pretrained(dirs[name])
        for f in ("vocab.json", "merges.txt"):
            shutil.copy(files["tokenizer"] / f, dirs[name] / f)
    return dirs


def load_hf(path: Path):
    config = json.loads((path / "config.json").read_text())
    return getattr(transformers, config["architectures"][0]).from_pretrained(path).eval()


def built(tmp_path: Path, data: Path, init_from: Path, **options) -> Run:
    run = Run.plan(data=str(data), init_from=init_from, out=tmp_path / "run", settings=SMALL,
                   **options)  # fmt: skip
    run.load()
    run.build()
    return run


CASES = {"gpt2": ("txt", "lm"), "llama": ("txt", "lm"), "bert": ("csv", "classify"),
         "bart": ("tsv", "seq2seq")}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_before_any_step_the_model_is_the_pretrained_one(tmp_path, files, hf_dirs, name):
    data, task = CASES[name]
    run = built(tmp_path, files[data], hf_dirs[name], task=task, steps=2)
    hf, model = load_hf(hf_dirs[name]), run.model.eval()
    ids = torch.tensor([run.tokenizer.encode("the cat sat on the mat.")])
    with torch.no_grad():
        if name == "bart":
            ours = model(ids, None, ids).hidden_states
            theirs = hf.model(input_ids=ids, decoder_input_ids=ids).last_hidden_state
        elif name == "bert":
            ours = model(ids).hidden_states
            theirs = hf(ids).last_hidden_state
        else:
            ours = model(ids).hidden_states
            theirs = hf(ids, output_hidden_states=True).hidden_states[-1]
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)
    assert run.tokenizer.vocab_size == 300  # the directory's tokenizer, not one trained
    assert run.plan.train.lr == 5e-5
    if task == "lm":  # the training windows: min(max_len, 1024)
        assert run.plan.train.context == 1024 and run.trainer.window() == 64
    if name == "bart":  # the decoder starts as BART's does (</s>), not from <BOS>
        start = hf.config.decoder_start_token_id
        assert model.config.decoder_start_id == start != run.tokenizer.bos_id
        batch = run.trainer.train_stream.batch(0)
        assert set(batch["decoder_input_ids"][:, 0].tolist()) == {start}


def test_classify_from_bert_trains_a_new_head_and_matches_hugging_face(tmp_path, files, hf_dirs):
    run = built(tmp_path, files["csv"], hf_dirs["bert"], steps=3)
    assert isinstance(run.model, EncoderClassifier)
    assert run.model.config.pooling == "cls" and run.model.config.pooler  # BERT's, kept
    assert run.start.new == ["classifier 32 -> 2"] and run.start.left_out == []
    bert = load_hf(hf_dirs["bert"])
    assert torch.equal(run.model.pooler.weight, bert.pooler.dense.weight)
    before = run.model.blocks[0].attn.q_proj.weight.detach().clone()
    run.fit()
    assert not torch.equal(run.model.blocks[0].attn.q_proj.weight, before)  # all of it trains
    from glassformer.interop.huggingface import to_huggingface

    model = run.model.cpu().eval()
    hf = to_huggingface(model, architecture="BertForSequenceClassification").eval()
    texts = ["good fun day 3", "bad sad night 10 and more"]
    ids = [[run.tokenizer.bos_id, *run.tokenizer.encode(t), run.tokenizer.eos_id] for t in texts]
    width = max(map(len, ids))
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    ids = torch.tensor([x + [run.tokenizer.pad_id] * (width - len(x)) for x in ids])
    with torch.no_grad():
        ours, theirs = model(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_classify_from_a_decoder_pools_the_last_real_token(tmp_path, files, hf_dirs):
    run = built(tmp_path, files["csv"], hf_dirs["gpt2"], steps=2)
    model = run.model.eval()
    assert isinstance(model, DecoderClassifier) and model.config.pooling == "last"
    assert run.start.new == ["classifier 32 -> 2"] and run.start.left_out == []
    assert model.classifier.bias is None  # as HF's score
    assert model.classifier_dropout.p == 0.0 and model.blocks[0].dropout.p == 0.1  # likewise
    hf = transformers.GPT2ForSequenceClassification.from_pretrained(
        hf_dirs["gpt2"], num_labels=2, pad_token_id=0
    ).eval()
    ids = torch.tensor([[1, 40, 50, 60, 2], [1, 70, 80, 0, 0]])  # right padding
    mask = (ids != 0).long()
    with torch.no_grad():
        hf.score.weight.copy_(model.classifier.weight)
        torch.testing.assert_close(
            model(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits,
            atol=1e-5, rtol=0,
        )  # fmt: skip
        left = torch.tensor([[0, 0, 1, 70, 80]])  # left padding: the same as unpadded
        alone = model(torch.tensor([[1, 70, 80]])).logits
        torch.testing.assert_close(model(left, (left != 0).long()).logits, alone)
    run.model.train()
    run.fit()  # a few steps: the body and the head both train
    model = run.model.cpu().eval()
    assert_same_as_hugging_face_after_training(model, hf, ids, mask)


def test_classify_from_llama_after_training_matches_hugging_face(tmp_path, files, hf_dirs):
    run = built(tmp_path, files["csv"], hf_dirs["llama"], steps=2)
    run.fit()
    model = run.model.cpu().eval()
    assert isinstance(model, DecoderClassifier) and model.config.positional == "rotary"
    hf = transformers.LlamaForSequenceClassification.from_pretrained(
        hf_dirs["llama"], num_labels=2, pad_token_id=0
    ).eval()
    ids = torch.tensor([[1, 40, 50, 60, 2], [1, 70, 80, 0, 0]])  # right padding
    assert_same_as_hugging_face_after_training(model, hf, ids, (ids != 0).long())


def assert_same_as_hugging_face_after_training(model, hf, ids, mask):
    """The trained DecoderClassifier's weights in Hugging Face's *ForSequenceClassification
    (the body through to_huggingface of a DecoderLM holding them) give its logits."""
    from glassformer.interop.huggingface import to_huggingface

    body = DecoderLM(model.config)
    missing, unexpected = body.load_state_dict(model.state_dict(), strict=False)
    assert missing == ["unembed.proj.weight"] and unexpected == ["classifier.weight"]  # tied
    lm = to_huggingface(body.eval())
    trained = getattr(lm, lm.base_model_prefix).state_dict()  # the body: transformer / model
    with torch.no_grad():
        getattr(hf, hf.base_model_prefix).load_state_dict(trained)
        hf.score.weight.copy_(model.classifier.weight)
        ours, theirs = model(ids, mask).logits, hf(input_ids=ids, attention_mask=mask).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)


def test_mlm_then_classifier_from_a_glassformer_run(tmp_path, files):
    mlm = Run.plan(data=str(files["txt"]), task="mlm", out=tmp_path / "mlm", steps=2,
                   settings={"model": {"d_model": 32, "n_layer": 1, "n_head": 2, "max_len": 32},
                             **SMALL})  # fmt: skip
    mlm.train()
    pretrained = load_model(tmp_path / "mlm")
    run = Run.plan(data=str(files["csv"]), init_from=tmp_path / "mlm", out=tmp_path / "cls",
                   steps=2, settings=SMALL)  # fmt: skip
    run.load()
    run.build()
    assert isinstance(run.model, EncoderClassifier) and run.model.config.pooling == "mean"
    assert run.tokenizer.to_dict() == pretrained.tokenizer.to_dict()  # the run's own, reused
    assert run.start.new == ["classifier 32 -> 2"]
    assert run.start.left_out == []  # the MLM head is the embedding, tied
    for name, tensor in pretrained.state_dict().items():
        if not name.startswith("unembed"):
            assert torch.equal(run.model.state_dict()[name], tensor), name
    assert run.fit()["step"] == 2
    saved = json.loads((tmp_path / "cls" / "run.json").read_text())
    assert saved["init_from"] == str((tmp_path / "mlm").resolve())


def test_mlm_from_a_bert_body_gets_a_new_head(tmp_path, files, hf_dirs):
    run = built(tmp_path, files["txt"], hf_dirs["bert"], task="mlm", steps=2)
    assert run.start.left_out == ["pooler 32 -> 32"]  # BertModel's, unused by an MLM
    assert run.start.new == ["unembed (sharing the loaded token embedding)"]
    assert run.model.unembed.proj.weight is run.model.embed.weight


def test_resume_continues_from_the_checkpoint_not_the_pretrained_model(tmp_path, files, hf_dirs):
    """A constant learning rate (min_lr = lr, the default 5e-5), so that a run extended from
    2 to 4 steps must equal a 4-step run."""
    copy = tmp_path / "bert"
    shutil.copytree(hf_dirs["bert"], copy)
    settings = {"train": {**SMALL["train"], "min_lr": 5e-5, "warmup": 0}}
    whole = Run.plan(data=str(files["csv"]), init_from=copy, out=tmp_path / "whole", steps=4,
                     settings=settings)  # fmt: skip
    whole.train()
    parts = Run.plan(data=str(files["csv"]), init_from=copy, out=tmp_path / "parts", steps=2,
                     settings=settings)  # fmt: skip
    parts.train()
    assert json.loads((tmp_path / "parts" / "run.json").read_text())["init_from"] == str(copy)
    shutil.rmtree(copy)  # resuming reads the checkpoint only
    resumed = Run.resume(tmp_path / "parts", steps=4)
    resumed.train()
    assert resumed.start is None
    # the weights after step 4 (a run folder loads its best checkpoint, maybe step 2's)
    a, b = (load_model(latest_checkpoint(tmp_path / run)) for run in ("whole", "parts"))
    for name, tensor in a.state_dict().items():
        torch.testing.assert_close(b.state_dict()[name], tensor, atol=0, rtol=0, msg=name)


def test_free_model_settings_apply_and_fixed_ones_must_agree(tmp_path, files, hf_dirs):
    settings = {"model": {"dropout": 0.0, "d_model": 32, "embeddings": "fixed"}, **SMALL}
    run = Run.plan(data=str(files["csv"]), init_from=hf_dirs["bert"], out=tmp_path / "a",
                   settings=settings, steps=1)  # fmt: skip
    run.load()
    assert run.model_config.dropout == 0.0 and run.model_config.d_model == 32
    assert run.model_config.embeddings == "fixed"  # the pretrained embeddings do not train
    settings = {"model": {"d_model": 64}}
    run = Run.plan(data=str(files["csv"]), init_from=hf_dirs["bert"], out=tmp_path / "b",
                   settings=settings, steps=1)  # fmt: skip
    with pytest.raises(RunError, match=r"model.d_model=64 contradicts .* fix d_model=32"):
        run.load()
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("name", "data", "task", "message"),
    [
        ("bart", "csv", "classify", r"an encoder-decoder model .*run.task=classify needs encoder"),
        ("bert", "txt", "lm", r"an encoder model .*run.task=lm needs decoder"),
        ("gpt2", "tsv", "seq2seq", r"a decoder model .*run.task=seq2seq needs encoder-decoder"),
    ],
)
def test_a_model_of_another_family_is_refused(tmp_path, files, hf_dirs, name, data, task, message):
    run = Run.plan(data=str(files[data]), task=task, init_from=hf_dirs[name],
                   out=tmp_path / "run")  # fmt: skip
    with pytest.raises(RunError, match=message):
        run.load()
    assert not (tmp_path / "run").exists()


def test_lora_settings_the_pretrained_model_cannot_take_are_refused(tmp_path, files, hf_dirs):
    """GPT-2 ties its unembedding (one matrix; --init-from cannot untie it), and its Linears
    read or write 32 numbers: rank 33 would train more for no larger update."""
    lora = {"train": {"lora_rank": 33}}
    run = Run.plan(data=str(files["txt"]), init_from=hf_dirs["gpt2"], out=tmp_path / "run",
                   settings=lora)  # fmt: skip
    with pytest.raises(RunError) as err:
        run.load()
    assert str(err.value) == (
        "train.lora_rank=33 is larger than blocks.0.attn.q_proj allows: a Linear 32 -> 32, "
        "whose update B A has rank at most min(32, 32) = 32; allowed: train.lora_rank from 1 "
        "to 32"
    )
    lora = {"train": {"lora_rank": 2, "lora_targets": ["unembed.proj"]}}
    run = Run.plan(data=str(files["txt"]), init_from=hf_dirs["gpt2"], out=tmp_path / "run",
                   settings=lora)  # fmt: skip
    with pytest.raises(RunError, match=r"tied to embed.weight .* train the tied matrix without "):
        run.load()


def test_a_folder_whose_weights_hold_nan_is_refused_not_blamed_on_the_learning_rate(
    tmp_path, files, hf_dirs
):
    """A Hugging Face folder with a NaN in a weight: refused when read, naming the tensor,
    before anything is written (training from it gave a NaN loss at step 1 and the advice to
    lower the learning rate)."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "bert"
    shutil.copytree(hf_dirs["bert"], folder)
    weights = load_file(folder / "model.safetensors")
    weights["encoder.layer.1.intermediate.dense.weight"][5, 7] = float("nan")
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    run = Run.plan(data=str(files["csv"]), init_from=folder, out=tmp_path / "run", steps=2)
    with pytest.raises(RunError) as err:
        run.load()
    assert str(err.value) == (
        f"init_from {folder}: tensor 'blocks.1.mlp.fc1.weight' holds 1 NaN value: the "
        "weights are damaged (a run that diverged, or a corrupted file); load another "
        "checkpoint or train again"
    )
    assert not (tmp_path / "run").exists()
