"""A LoRA run's checkpoints: model.safetensors holds the model as it is, W and b under the
plain model's names plus each layer's lora_A and lora_B, and config.json records the adapters,
so load_model builds the same model; a run resumes exactly, also after kill -9, and from a
checkpoint of the earlier layout (the merged model plus lora.safetensors)."""

import importlib.util
import json
import os
import random
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer import DecoderLM, load_model, preset
from glassformer.data import load_dataset
from glassformer.finetune import add_lora, lora_layers, merge_lora
from glassformer.models.legacy_keys import LEGACY_LORA_FILE
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer
from glassformer.training.state import latest_checkpoint
from glassformer.training.trainable import add_run_lora

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())
SMALL = dict(vocab_size=TOK.vocab_size, d_model=32, n_head=4, n_layer=2, max_len=32, dropout=0.1)
SMALL["ff_dropout"] = 0.0  # GPT-2's dropout sites: to_huggingface can express them
LORA = dict(lora_rank=4, lora_alpha=8.0, lora_dropout=0.1, lora_targets=["attn.out_proj", "fc2"])
ADAPTED = [f"blocks.{i}.{part}" for i in (0, 1) for part in ("attn.out_proj", "mlp.fc2")]


def make(run_dir, **overrides):
    """A Trainer of a LoRA run, its model built as Run.build builds it (adapters added)."""
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", **SMALL))
    settings = dict(task="lm", steps=8, batch_size=4, warmup=2, eval_every=0, save_every=4,
                    log_every=1, lr=1e-2, **LORA)  # fmt: skip
    config = TrainConfig(**{**settings, **overrides})
    add_run_lora(model, config)
    return Trainer(model, TOK, TEXT, None, config, run_dir, progress=False)


def plain_names():
    return set(DecoderLM(preset("tiny", **SMALL)).state_dict()) - {"unembed.proj.weight"}


def test_the_checkpoint_keeps_plain_names_and_loads_the_same_model(tmp_path):
    trainer = make(tmp_path)
    trainer.fit()
    model = trainer.model.eval()
    assert list(lora_layers(model)) == ADAPTED
    assert trainer.trained == sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
    ckpt = latest_checkpoint(tmp_path)
    stored = load_file(ckpt / "model.safetensors")
    adapters = {f"{p}.lora_{x}" for p in ADAPTED for x in "AB"}
    assert set(stored) == plain_names() | adapters
    assert sorted(os.listdir(ckpt)) == [
        "config.json", "model.safetensors", "tokenizer.json", "trainer.json",
        "trainer.safetensors",
    ]  # fmt: skip
    recorded = json.loads((ckpt / "config.json").read_text())["lora"]
    assert recorded == {"paths": ADAPTED, "rank": 4, "alpha": 8.0, "dropout": 0.1}
    assert stored["blocks.0.mlp.fc2.lora_B"].abs().max() > 0  # B trained
    loaded = load_model(ckpt).eval()
    assert list(lora_layers(loaded)) == ADAPTED
    for name, p in model.state_dict().items():  # W unmerged, A, B: bit for bit
        assert torch.equal(loaded.state_dict()[name], p), name
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    assert torch.equal(loaded(ids).logits, model(ids).logits)
    frozen = load_model(ckpt).eval()  # W itself is the start's: only A and B trained
    start = make(tmp_path / "start").model
    assert torch.equal(frozen.blocks[0].mlp.fc2.weight, start.blocks[0].mlp.fc2.weight)


def test_a_merged_lora_model_reads_in_to_huggingface(tmp_path):
    from glassformer.interop.huggingface import to_huggingface

    trainer = make(tmp_path, steps=4)
    trainer.fit()
    loaded = load_model(latest_checkpoint(tmp_path)).eval()
    with pytest.raises(ValueError, match=r"glassformer.finetune.merge_lora\(model\)$"):
        to_huggingface(loaded)
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    with torch.no_grad():
        adapted = loaded(ids).logits
        assert merge_lora(loaded) == ADAPTED and set(loaded.state_dict()) >= plain_names()
        hf = to_huggingface(loaded).eval()
        assert type(hf).__name__ == "GPT2LMHeadModel"
        torch.testing.assert_close(hf(ids).logits, loaded(ids).logits, atol=1e-5, rtol=0)
        torch.testing.assert_close(hf(ids).logits, adapted, atol=1e-5, rtol=0)


def crash_after_step_4(trainer):
    step = trainer.train_step

    def crash_in_step_6():
        if trainer.step == 5:
            raise RuntimeError("killed")  # step 4 was saved, step 5 is lost
        return step()

    trainer.train_step = crash_in_step_6
    with pytest.raises(RuntimeError, match="killed"):
        trainer.fit()


def assert_same_run(ours: Path, theirs: Path, trainers=None):
    if trainers:
        whole, again = (t.model for t in trainers)
        for (name, p), q in zip(whole.named_parameters(), again.parameters(), strict=True):
            assert torch.equal(p, q), name
    for name in ("model.safetensors", "trainer.safetensors"):
        a = load_file(ours / "checkpoints" / "step-000008" / name)
        b = load_file(theirs / "checkpoints" / "step-000008" / name)
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in b), name


def test_resumed_lora_run_equals_an_uninterrupted_one(tmp_path):
    whole = make(tmp_path / "whole")
    whole.fit()
    crash_after_step_4(make(tmp_path / "half"))
    again = make(tmp_path / "half")
    again.fit(resume=True)
    assert again.step == 8
    assert_same_run(tmp_path / "half", tmp_path / "whole", (whole, again))


def to_earlier_layout(ckpt: Path, scaling: float) -> None:
    """Rewrite a checkpoint of today's layout in the earlier one: model.safetensors the plain
    model with each adapted weight merged, W + (alpha / r) B A; lora.safetensors each layer's
    lora_A, lora_B and W as base.weight; config.json without its lora entry."""
    plain = load_file(ckpt / "model.safetensors")
    lora = {}
    for p in ADAPTED:
        a, b, w = plain.pop(f"{p}.lora_A"), plain.pop(f"{p}.lora_B"), plain[f"{p}.weight"]
        plain[f"{p}.weight"] = w + scaling * (b @ a)
        lora.update({f"{p}.lora_A": a, f"{p}.lora_B": b, f"{p}.base.weight": w})
    save_file(plain, ckpt / "model.safetensors", metadata={"format": "pt"})
    save_file(lora, ckpt / LEGACY_LORA_FILE)
    meta = json.loads((ckpt / "config.json").read_text())
    del meta["lora"]
    (ckpt / "config.json").write_text(json.dumps(meta))


def test_a_checkpoint_of_the_earlier_lora_layout_resumes_exactly(tmp_path):
    whole = make(tmp_path / "whole")
    whole.fit()
    crash_after_step_4(make(tmp_path / "half"))
    ckpt = tmp_path / "half" / "checkpoints" / "step-000004"
    kept = make(tmp_path / "half").model
    kept.load_state_dict(load_file(ckpt / "model.safetensors"), strict=False)  # tied: absent
    to_earlier_layout(ckpt, scaling=8.0 / 4)
    plain = load_model(ckpt).eval()  # read as it always was: the plain, merged model
    assert not lora_layers(plain)
    merge_lora(kept)
    for name, p in plain.state_dict().items():
        assert torch.equal(p, kept.state_dict()[name]), name
    again = make(tmp_path / "half")
    again.fit(resume=True)
    assert again.step == 8
    assert_same_run(tmp_path / "half", tmp_path / "whole", (whole, again))


def test_a_damaged_or_adapterless_checkpoint_is_refused_on_resume(tmp_path):
    make(tmp_path, steps=4).fit()
    weights = tmp_path / "checkpoints" / "step-000004" / "model.safetensors"
    tensors = load_file(weights)
    save_file({**tensors, "blocks.0.attn.out_proj.lora_A": torch.zeros(2, 32)}, weights)
    wrong = (
        r"model.safetensors: tensor .blocks.0.attn.out_proj.lora_A. has shape \(2, 32\), "
        r"the config needs \(4, 32\)"
    )
    with pytest.raises(ValueError, match=wrong):
        make(tmp_path).fit(resume=True)
    save_file({k: v for k, v in tensors.items() if "lora_" not in k}, weights)
    with pytest.raises(ValueError, match=r"model.safetensors: weights do not match the config: "
                       r"missing 8 \['blocks.0.attn.out_proj.lora_A'"):  # fmt: skip
        make(tmp_path).fit(resume=True)


def test_a_trainer_refuses_lora_settings_for_a_model_without_adapters(tmp_path):
    torch.manual_seed(0)
    config = TrainConfig(task="lm", steps=1, batch_size=4, **LORA)
    with pytest.raises(ValueError) as err:
        Trainer(DecoderLM(preset("tiny", **SMALL)), TOK, TEXT, None, config, None)
    assert str(err.value) == (
        "train.lora_rank=4 but the model has no LoRA layers: add them where the model is "
        "built, with glassformer.finetune.add_lora (Run.build adds train.lora_rank's), or set "
        "train.lora_rank to the model's"
    )


def _kill_tools():
    """tests/training/test_kill.py's helpers (start, wait_for, kill, ...), by path."""
    path = Path(__file__).parents[1] / "training" / "test_kill.py"
    spec = importlib.util.spec_from_file_location("kill_tools", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
def test_kill_9_then_resume_of_a_lora_run_equals_an_uninterrupted_run(tmp_path):
    k = _kill_tools()
    text = tmp_path / "train.txt"
    text.write_text("the cat sat on the mat; the dog lay on the log.\n" * 40)
    lora = ["--set", "train.lora_rank=2", "--set", 'train.lora_targets=["q_proj", "fc1"]']
    argv = ["--data", text, "--steps", 12, *k.TINY, *lora]
    whole = tmp_path / "whole"
    reference = k.start(whole, argv)
    out = tmp_path / "killed"
    proc = k.start(out, argv)
    first = random.Random(3).choice([2, 4])
    k.wait_for(proc, lambda: k.step_of(latest_checkpoint(out)) >= first, f"checkpoint {first}")
    time.sleep(0.02)
    saved, _ = k.kill(proc, out)
    assert "blocks.0.mlp.fc1.lora_A" in load_file(latest_checkpoint(out) / "model.safetensors")
    proc = k.start(out, ["--resume"])
    assert proc.wait(timeout=60) == 0, (tmp_path / "killed.log").read_text()
    assert reference.wait(timeout=60) == 0, (tmp_path / "whole.log").read_text()
    log = (tmp_path / "killed.log").read_text()
    assert f"resuming at step {saved} to step 12" in log
    assert "M parameters, 224 train, context 16)" in log  # A, B: (2·16 + 16·2) + (2·16 + 64·2)
    for name in ("model.safetensors", "trainer.safetensors"):
        ours = load_file(out / "checkpoints" / "step-000012" / name)
        theirs = load_file(whole / "checkpoints" / "step-000012" / name)
        assert ours.keys() == theirs.keys()
        for key, tensor in theirs.items():
            assert torch.equal(ours[key], tensor), key
    assert k.losses(out) == k.losses(whole)


def test_another_lora_alpha_is_refused_on_resume(tmp_path):
    """rank and targets change the tensors' shapes; alpha only their scale, (alpha / r) B A:
    trainer.json's train_config says which alpha the adapters were trained with."""
    make(tmp_path, steps=4).fit()
    trainer_json = tmp_path / "checkpoints" / "step-000004" / "trainer.json"
    with pytest.raises(ValueError) as err:
        make(tmp_path, lora_alpha=16.0).fit(resume=True)
    assert str(err.value) == (
        f"{trainer_json}: the checkpoint's LoRA adapters were trained with lora_alpha=8.0 (its "
        "train_config), this run has train.lora_alpha=16, which would change their update "
        "(alpha / r) B A; resume with train.lora_alpha=8.0, or start a new run"
    )
    resumed = make(tmp_path)  # the same alpha resumes
    resumed.fit(resume=True)
    assert resumed.step == 8


def test_save_pretrained_of_a_model_with_lora_writes_it_as_it_is(tmp_path):
    """``model.save_pretrained`` of a model with adapters (``run.model`` after a LoRA run)
    writes what load_model reads back as the same model; merged, it is the plain model."""
    torch.manual_seed(0)
    model = add_lora(DecoderLM(preset("tiny", **SMALL)).eval(), ["attn.out_proj", "fc2"], 4, 8.0)
    with torch.no_grad():
        for layer in lora_layers(model).values():
            layer.lora_B.normal_(0.0, 0.1)  # as after training: the update is not zero
    model.save_pretrained(tmp_path / "saved", TOK)
    loaded = load_model(tmp_path / "saved").eval()
    assert list(lora_layers(loaded)) == ADAPTED and loaded.tokenizer is not None
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)
        merge_lora(model)
        torch.testing.assert_close(model(ids).logits, loaded(ids).logits, atol=1e-5, rtol=0)
    assert set(model.state_dict()) == set(DecoderLM(preset("tiny", **SMALL)).state_dict())


def test_the_default_targets_adapt_w_q_and_w_v_alone(tmp_path):
    """The LoRA paper's choice: adapters on W^Q and W^V of every self-attention only; W^K
    stays a plain Linear, exactly as it started, and so does every W."""
    from torch import nn

    from glassformer.finetune import DEFAULT_TARGETS

    assert TrainConfig().lora_targets == list(DEFAULT_TARGETS) == ["attn.q_proj", "attn.v_proj"]
    trainer = make(tmp_path, lora_targets=list(DEFAULT_TARGETS), steps=4)
    trainer.fit()
    model = trainer.model
    assert list(lora_layers(model)) == [
        f"blocks.{i}.attn.{p}" for i in (0, 1) for p in ("q_proj", "v_proj")
    ]
    torch.manual_seed(0)
    start = DecoderLM(preset("tiny", **SMALL))  # as make() builds it
    for i in (0, 1):
        attn, was = model.blocks[i].attn, start.blocks[i].attn
        assert type(attn.k_proj) is nn.Linear
        for name, p in was.k_proj.named_parameters():
            assert torch.equal(getattr(attn.k_proj, name), p), name
        for proj in ("q_proj", "v_proj"):
            assert torch.equal(getattr(attn, proj).weight, getattr(was, proj).weight)
            assert getattr(attn, proj).lora_B.abs().max() > 0  # B trained


def test_adapters_of_the_fused_in_proj_in_the_earlier_layout_are_refused_on_resume(tmp_path):
    """One A for [W^Q; W^K; W^V] cannot continue as three adapters with an A each."""
    make(tmp_path, steps=4).fit()
    ckpt = tmp_path / "checkpoints" / "step-000004"
    to_earlier_layout(ckpt, scaling=8.0 / 4)
    lora = load_file(ckpt / LEGACY_LORA_FILE)
    lora["blocks.0.attn.in_proj.lora_A"] = lora.pop("blocks.0.attn.out_proj.lora_A")
    save_file(lora, ckpt / LEGACY_LORA_FILE)
    with pytest.raises(ValueError) as err:
        make(tmp_path).fit(resume=True)
    assert str(err.value) == (
        f"{ckpt / LEGACY_LORA_FILE}: 'blocks.0.attn.in_proj.lora_A' is an adapter of the fused "
        "attention projection in_proj ([W^Q; W^K; W^V], one A for the three), which models "
        "hold as q_proj, k_proj, v_proj with an adapter each: the run cannot resume exactly. "
        "model.safetensors (the merged weights) loads: start a new run from it (init_from)"
    )
