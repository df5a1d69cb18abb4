"""A LoRA run's checkpoints: model.safetensors is the plain merged model (load_model and
to_huggingface read it), lora.safetensors resumes the adapters exactly, also after kill -9."""

import importlib.util
import os
import random
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from glassformer import DecoderLM, load_model, preset
from glassformer.data import load_dataset
from glassformer.finetune import LORA_FILE, lora_layers, merge_lora
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer
from glassformer.training.state import latest_checkpoint

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())
SMALL = dict(vocab_size=TOK.vocab_size, d_model=32, n_head=4, n_layer=2, max_len=32, dropout=0.1)
SMALL["ff_dropout"] = 0.0  # GPT-2's dropout sites: to_huggingface can express them
LORA = dict(lora_rank=4, lora_alpha=8.0, lora_dropout=0.1,
            lora_targets=["attn.q_proj", "attn.v_proj", "fc2"])  # fmt: skip


def make(run_dir, **overrides):
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", **SMALL))
    settings = dict(task="lm", steps=8, batch_size=4, warmup=2, eval_every=0, save_every=4,
                    log_every=1, lr=1e-2, **LORA)  # fmt: skip
    config = TrainConfig(**{**settings, **overrides})
    return Trainer(model, TOK, TEXT, None, config, run_dir, progress=False)


def test_the_checkpoint_is_the_merged_plain_model(tmp_path):
    trainer = make(tmp_path)
    trainer.fit()
    model = trainer.model.eval()
    assert len(lora_layers(model)) == 6
    assert trainer.trained == sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
    ckpt = latest_checkpoint(tmp_path)
    loaded = load_model(ckpt).eval()
    assert not lora_layers(loaded)
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    torch.testing.assert_close(loaded(ids).logits, model(ids).logits, atol=1e-5, rtol=0)
    merge_lora(model)
    for name, p in loaded.state_dict().items():  # the same numbers merge_lora gives
        assert torch.equal(p, model.state_dict()[name]), name
    lora = load_file(ckpt / LORA_FILE)
    assert sorted(lora) == sorted(
        f"blocks.{i}.{part}.{t}"
        for i in (0, 1)
        for part in ("attn.q_proj", "attn.v_proj", "mlp.fc2")
        for t in ("base.weight", "lora_A", "lora_B")
    )
    assert lora["blocks.0.mlp.fc2.lora_B"].abs().max() > 0  # B trained


def test_a_merged_checkpoint_reads_in_to_huggingface(tmp_path):
    from glassformer.interop.huggingface import to_huggingface

    trainer = make(tmp_path, steps=4)
    trainer.fit()
    loaded = load_model(latest_checkpoint(tmp_path)).eval()
    hf = to_huggingface(loaded).eval()
    assert type(hf).__name__ == "GPT2LMHeadModel"
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    with torch.no_grad():
        torch.testing.assert_close(hf(ids).logits, loaded(ids).logits, atol=1e-5, rtol=0)
        torch.testing.assert_close(
            hf(ids).logits, trainer.model.eval()(ids).logits, atol=1e-5, rtol=0
        )


def test_resumed_lora_run_equals_an_uninterrupted_one(tmp_path):
    whole = make(tmp_path / "whole")
    whole.fit()
    half = make(tmp_path / "half")
    step = half.train_step

    def crash_in_step_6():
        if half.step == 5:
            raise RuntimeError("killed")  # step 4 was saved, step 5 is lost
        return step()

    half.train_step = crash_in_step_6
    with pytest.raises(RuntimeError, match="killed"):
        half.fit()
    again = make(tmp_path / "half")
    again.fit(resume=True)
    assert again.step == 8
    pairs = zip(whole.model.named_parameters(), again.model.parameters(), strict=True)
    for (name, p), q in pairs:
        assert torch.equal(p, q), name
    for name in ("model.safetensors", LORA_FILE, "trainer.safetensors"):
        ours = load_file(tmp_path / "half" / "checkpoints" / "step-000008" / name)
        theirs = load_file(tmp_path / "whole" / "checkpoints" / "step-000008" / name)
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in theirs), name


def test_a_missing_or_damaged_lora_file_is_refused_on_resume(tmp_path):
    make(tmp_path, steps=4).fit()
    lora = tmp_path / "checkpoints" / "step-000004" / LORA_FILE
    tensors = load_file(lora)
    save_file({**tensors, "blocks.0.attn.q_proj.lora_A": torch.zeros(2, 32)}, lora)
    wrong = r"lora.safetensors: tensor .blocks.0.attn.q_proj.lora_A. is torch.float32 \(2, 32\)"
    with pytest.raises(ValueError, match=wrong):
        make(tmp_path).fit(resume=True)
    lora.unlink()
    with pytest.raises(ValueError, match="lora.safetensors: unreadable training state"):
        make(tmp_path).fit(resume=True)


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
    lora = ["--set", "train.lora_rank=2", "--set", 'train.lora_targets=["in_proj", "fc1"]']
    argv = ["--data", text, "--steps", 12, *k.TINY, *lora]
    whole = tmp_path / "whole"
    reference = k.start(whole, argv)
    out = tmp_path / "killed"
    proc = k.start(out, argv)
    first = random.Random(3).choice([2, 4])
    k.wait_for(proc, lambda: k.step_of(latest_checkpoint(out)) >= first, f"checkpoint {first}")
    time.sleep(0.02)
    saved, _ = k.kill(proc, out)  # the newest checkpoint loads as a plain model
    assert (latest_checkpoint(out) / LORA_FILE).is_file()
    proc = k.start(out, ["--resume"])
    assert proc.wait(timeout=60) == 0, (tmp_path / "killed.log").read_text()
    assert reference.wait(timeout=60) == 0, (tmp_path / "whole.log").read_text()
    log = (tmp_path / "killed.log").read_text()
    assert f"resuming at step {saved} to step 12" in log
    # "in_proj" adapts q_proj, k_proj, v_proj: A, B: 3 (2·16 + 16·2) + (2·16 + 64·2)
    assert "M parameters, 352 train, context 16)" in log
    for name in ("model.safetensors", LORA_FILE):
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


def test_save_pretrained_of_a_model_with_lora_writes_the_merged_plain_model(tmp_path):
    """``model.save_pretrained`` in the middle of LoRA (as ``run.model`` is after a LoRA run)
    writes what load_model reads: the merged weights under a plain model's names; the model
    in memory keeps its adapters."""
    from glassformer.finetune import apply_lora

    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", **SMALL)).eval()
    apply_lora(model, ["attn.q_proj", "attn.v_proj", "fc2"], rank=4, alpha=8.0)
    with torch.no_grad():
        for layer in lora_layers(model).values():
            layer.lora_B.normal_(0.0, 0.1)  # as after training: the update is not zero
    model.save_pretrained(tmp_path / "saved", TOK)
    loaded = load_model(tmp_path / "saved").eval()
    assert len(lora_layers(model)) == 6 and not lora_layers(loaded)
    assert "blocks.0.attn.q_proj.weight" in load_file(tmp_path / "saved" / "model.safetensors")
    ids = torch.randint(0, TOK.vocab_size, (2, 20))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits, atol=1e-5, rtol=0)
    assert loaded.tokenizer is not None


def test_adapters_of_the_fused_in_proj_are_refused_on_resume_saying_why(tmp_path):
    """A checkpoint of a run that adapted the fused [W^Q; W^K; W^V] (one A for the three) does
    not resume into adapters of q_proj, k_proj, v_proj; its merged model still loads."""
    make(tmp_path, steps=4).fit()
    ckpt = tmp_path / "checkpoints" / "step-000004"
    tensors = load_file(ckpt / LORA_FILE)
    save_file({k.replace(".attn.q_proj.", ".attn.in_proj."): v for k, v in tensors.items()},
              ckpt / LORA_FILE)  # fmt: skip
    with pytest.raises(ValueError, match=r"'blocks\.0\.attn\.in_proj\.base\.weight' is an "
                       r"adapter of the fused attention projection in_proj .* cannot resume "
                       r"exactly"):  # fmt: skip
        make(tmp_path).fit(resume=True)
    assert not lora_layers(load_model(ckpt))
