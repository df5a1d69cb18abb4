"""The trainer: exact resume, checkpoints kept, Ctrl-C, schedule, weight decay (a NaN stop:
test_divergence.py)."""

import json
import signal

import pytest
import torch

from glassformer import DecoderLM, EncoderMLM, preset
from glassformer.data import load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer, build_optimizer, lr_at
from glassformer.training.state import checkpoints

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())
SMALL = dict(vocab_size=TOK.vocab_size, d_model=32, n_head=4, n_layer=2, max_len=32, dropout=0.1)


def make(task, run_dir, **overrides):
    torch.manual_seed(0)
    model = (DecoderLM if task == "lm" else EncoderMLM)(
        preset("tiny" if task == "lm" else "tiny-encoder", **SMALL)
    )
    settings = dict(
        task=task, steps=12, batch_size=4, warmup=3, eval_every=6, eval_batches=2,
        save_every=4, keep_last=2, log_every=1,
    )  # fmt: skip
    cfg = TrainConfig(**{**settings, **overrides})
    return Trainer(model, TOK, TEXT, TEXT, cfg, run_dir, progress=False)


def losses(run_dir):
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in lines if "loss" in r]


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_resumed_run_equals_uninterrupted_run(tmp_path, task):
    whole = make(task, tmp_path / "whole")
    whole.fit()
    crashed = make(task, tmp_path / "half")
    step = crashed.train_step

    def crash_in_step_10():
        if crashed.step == 9:
            raise RuntimeError("killed")  # steps 9 and 10 are lost; step 8 was saved
        return step()

    crashed.train_step = crash_in_step_10
    with pytest.raises(RuntimeError, match="killed"):
        crashed.fit()
    again = make(task, tmp_path / "half")  # a fresh process resumes from step 8
    again.fit(resume=True)
    assert again.step == 12
    for (name, p), q in zip(whole.model.named_parameters(), again.model.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert losses(tmp_path / "half") == losses(tmp_path / "whole")


def test_checkpoints_kept_are_the_last_k_and_the_best(tmp_path):
    trainer = make("lm", tmp_path)
    trainer.fit()
    kept = [p.name for p in checkpoints(tmp_path)]
    best = trainer.best["step"]
    assert kept[-2:] == ["step-000008", "step-000012"]
    assert f"step-{best:06d}" in kept and len(kept) <= 3
    ckpt = tmp_path / "checkpoints" / "step-000012"
    assert {p.name for p in ckpt.iterdir()} >= {
        "model.safetensors", "config.json", "tokenizer.json", "trainer.safetensors",
        "trainer.json",
    }  # fmt: skip
    assert not list((tmp_path / "checkpoints").glob(".*"))  # no temporary folders left


def test_resume_with_nothing_to_resume(tmp_path):
    with pytest.raises(ValueError, match="nothing to resume"):
        make("lm", tmp_path).fit(resume=True)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_finishes_the_step_saves_and_returns(tmp_path, signum):
    trainer = make("lm", tmp_path, save_every=0)
    step = trainer.train_step

    def interrupted_step():
        out = step()
        if trainer.step == 4:  # the 5th step is running
            signal.raise_signal(signum)
        return out

    trainer.train_step = interrupted_step
    before = signal.getsignal(signum)  # default, or SIG_IGN in a background job
    trainer.fit()
    assert trainer.step == 5
    assert (trainer.interrupted, trainer.stop_signal) == (True, signum)
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000005"]
    assert signal.getsignal(signum) is before  # the handler is given back


def test_tokens_per_second_counts_the_training_steps_since_the_last_line(tmp_path, monkeypatch):
    """Each logged rate is the tokens of the steps since the previous line over their time;
    evaluation and saving in between are not counted. A fake clock: step n takes n seconds,
    an evaluation 100 s."""
    import glassformer.training.trainer as trainer_module

    clock = [0.0]
    monkeypatch.setattr(trainer_module.time, "perf_counter", lambda: clock[0])
    trainer = make("lm", tmp_path, steps=6, log_every=3, eval_every=3, save_every=0)
    evaluate = trainer._evaluate

    def step():
        clock[0] += trainer.step + 1
        return 1.0, 100  # (loss, tokens)

    def slow_evaluation():
        clock[0] += 100.0
        return evaluate()

    trainer.train_step, trainer._evaluate = step, slow_evaluation
    trainer.fit()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # 300 tokens in 1 + 2 + 3 s, then 300 in 4 + 5 + 6 s
    assert [r["tokens_per_s"] for r in lines if "tokens_per_s" in r] == [50.0, 20.0]


def test_learning_rate_schedule():
    cfg = TrainConfig(lr=1.0, min_lr=0.1, warmup=10, steps=110)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.55)  # half way down the cosine
    assert lr_at(110, cfg) == pytest.approx(0.1)
    assert lr_at(500, cfg) == pytest.approx(0.1)


def test_weight_decay_only_on_matrices():
    model = DecoderLM(preset("tiny", **SMALL))
    opt = build_optimizer(model, TrainConfig(weight_decay=0.1))
    decayed, plain = opt.param_groups
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decayed["params"])
    assert all(p.dim() == 1 for p in plain["params"])
    assert len(decayed["params"]) + len(plain["params"]) == len(list(model.parameters()))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(task="translate"), ["task='translate'", "'seq2seq'"]),
        (dict(batch_size=0), ["batch_size=0"]),
        (dict(lr=-1.0), ["lr=-1.0"]),
        (dict(device="tpu"), ["device='tpu'"]),
        (dict(steps=-1), ["steps=-1"]),
    ],
)
def test_bad_settings(kwargs, words):
    with pytest.raises(ValueError) as err:
        TrainConfig(**kwargs)
    for word in words:
        assert word in str(err.value)


def test_task_and_model_family_must_agree(tmp_path):
    model = DecoderLM(preset("tiny", **SMALL))
    with pytest.raises(ValueError, match="task 'mlm' needs a model of the encoder family"):
        Trainer(model, TOK, TEXT, None, TrainConfig(task="mlm"), tmp_path)


def test_a_training_set_smaller_than_a_batch_must_split_over_the_processes(tmp_path, monkeypatch):
    """Under torchrun a batch is shared out example by example: 3 examples over 2 processes,
    or 1 window of text over 2 (which left a process with nothing: a traceback), is refused
    before training; 2 or 5 examples are not."""
    import glassformer.training.trainer as trainer_module
    from glassformer import EncoderClassifier
    from glassformer.training.distributed import Cluster

    monkeypatch.setattr(Cluster, "from_env", classmethod(lambda cls, device: cls(0, 2)))
    monkeypatch.setattr(trainer_module, "wrap_model", lambda model, *args: model)
    classifier = EncoderClassifier(preset("tiny-encoder", **{**SMALL, "n_classes": 2}))
    classify = TrainConfig(task="classify", steps=1, batch_size=4)
    (tmp_path / "note.txt").write_text("To be, or not to be.\n")
    one_window = load_dataset(tmp_path / "note.txt", val_fraction=0)
    cases = [(DecoderLM(preset("tiny", **SMALL)), TrainConfig(steps=1, batch_size=4), one_window)]
    for rows in (3, 2, 5):
        (tmp_path / f"{rows}.csv").write_text(
            "".join(f"{'ab'[i % 2]},text {i}\n" for i in range(rows))
        )
        cases.append((classifier, classify, load_dataset(tmp_path / f"{rows}.csv")))
    for (model, config, data), n in zip(cases, (1, 3, 2, 5), strict=True):
        if n % 2 == 0 or n > 4:
            trainer = Trainer(model, TOK, data, None, config, progress=False)
            assert trainer.train_stream.batch_size == min(n, 4)
            continue
        with pytest.raises(ValueError) as err:
            Trainer(model, TOK, data, None, config, progress=False)
        assert str(err.value) == (
            f"the training data has {n} examples (a language model's: windows of max_len "
            f"tokens), fewer than batch_size=4, and a batch of {n} cannot be shared evenly by "
            f"the 2 processes: allowed at least 4 training examples, or a number of processes "
            f"that divides {n}"
        )


EARLIER_NAMES = (  # today's names -> those of the first layout (models/legacy_keys.py)
    ('"blocks.', '"decoder.layers.'),
    ('"ln_final.', '"decoder.norm.'),
    ('"pos_embed.', '"embed.pos.'),
    ('"embed.weight', '"embed.token.weight'),
    ('"unembed.', '"head.unembed.'),
    (".attn.", ".self_attn."),
    (".ln1.", ".attn_norm."),
    (".ln2.", ".ff_norm."),
    (".mlp.", ".ffn."),
)


def _earlier(text: str) -> str:
    """trainer.json's text (names in quotes), a tensor's name or an optimizer state's
    ("opt/<name>/<field>"), in the first layout's names."""
    if text.startswith("opt/"):
        return "opt/" + _earlier(text[4:])
    quoted = text if text.startswith("{") else f'"{text}"'
    for today, earlier in EARLIER_NAMES:
        quoted = quoted.replace(today, earlier)
    return quoted if text.startswith("{") else quoted[1:-1]


_QKV = (".q_proj.", ".k_proj.", ".v_proj.")


def _fused_layout(ckpt) -> None:
    """Rewrite a checkpoint of today into the fused layout of every earlier one: each
    attention's q_proj, k_proj, v_proj (weights, and the optimizer's state of each) stacked by
    rows into one in_proj; a scalar state (Adam's step) kept once."""
    from safetensors.torch import load_file, save_file

    def fused(name: str) -> str:
        for part in _QKV:
            name = name.replace(part, ".in_proj.")
        return name

    for file in ("model.safetensors", "trainer.safetensors"):
        def rows_first(item):  # Q's rows, then K's, then V's
            return next((i for i, part in enumerate(_QKV) if part in item[0]), 0)

        parts = {}
        for name, t in sorted(load_file(ckpt / file).items(), key=rows_first):
            parts.setdefault(fused(name), []).append(t)
        tensors = {name: torch.cat(ts) if ts[0].dim() else ts[0] for name, ts in parts.items()}
        save_file(tensors, ckpt / file)
    meta = json.loads((ckpt / "trainer.json").read_text())
    opt = meta["optimizer"]
    for group in opt["param_groups"]:
        group["params"] = list(dict.fromkeys(fused(p) for p in group["params"]))
    opt["fields"] = {fused(k): v for k, v in opt["fields"].items()}
    opt["scalars"] = {fused(k): v for k, v in opt["scalars"].items()}
    (ckpt / "trainer.json").write_text(json.dumps(meta))


def test_a_run_saved_under_the_earlier_module_names_resumes_exactly(tmp_path):
    from safetensors.torch import load_file, save_file

    whole = make("lm", tmp_path / "whole")
    whole.fit()
    crashed = make("lm", tmp_path / "half")
    step = crashed.train_step

    def crash_in_step_10():
        if crashed.step == 9:
            raise RuntimeError("killed")  # step 8 was saved
        return step()

    crashed.train_step = crash_in_step_10
    with pytest.raises(RuntimeError, match="killed"):
        crashed.fit()
    ckpt = tmp_path / "half" / "checkpoints" / "step-000008"
    _fused_layout(ckpt)  # [W^Q; W^K; W^V] in one in_proj, its Adam moments too
    for name in ("model.safetensors", "trainer.safetensors"):
        tensors = load_file(ckpt / name)
        save_file({_earlier(k): v.clone() for k, v in tensors.items()}, ckpt / name)
    meta = (ckpt / "trainer.json").read_text()
    assert "decoder.layers.0.self_attn.in_proj.weight" in _earlier(meta)
    (ckpt / "trainer.json").write_text(_earlier(meta))
    again = make("lm", tmp_path / "half")
    again.fit(resume=True)
    assert again.step == 12
    for (name, p), q in zip(whole.model.named_parameters(), again.model.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert losses(tmp_path / "half") == losses(tmp_path / "whole")
