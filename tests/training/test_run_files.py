"""The trainer writes nothing through a symbolic link in its run folder: a linked
metrics.jsonl is replaced on resume (its target left as it was), and the run goes on."""

import json

import torch

from glassformer import DecoderLM, preset
from glassformer.data import load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer

TEXT = load_dataset("shakespeare", "validation")
TOK = CharTokenizer().train(TEXT.texts())


def trainer(run_dir, steps):
    torch.manual_seed(0)
    model = DecoderLM(preset("tiny", vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1))
    cfg = TrainConfig(task="lm", steps=steps, batch_size=2, save_every=2, log_every=1)
    return Trainer(model, TOK, TEXT, None, cfg, run_dir, progress=False)


def test_resume_replaces_a_linked_metrics_file_and_leaves_its_target(tmp_path):
    run = tmp_path / "run"
    trainer(run, 2).fit()
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes((run / "metrics.jsonl").read_bytes() + b"not the run's\n")
    before = outside.read_bytes()
    (run / "metrics.jsonl").unlink()
    (run / "metrics.jsonl").symlink_to(outside)
    trainer(run, 4).fit(resume=True)
    assert outside.read_bytes() == before
    assert not (run / "metrics.jsonl").is_symlink()
    steps = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
