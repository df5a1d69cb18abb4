"""``glassformer eval``: the trainer's metrics, printed and written as JSON."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from glassformer import load_model
from glassformer.data import load_dataset


def logged(cli, run_dir, step):
    """The validation metrics the trainer logged at ``step``."""
    (record,) = [r for r in cli.metrics(run_dir) if r["step"] == step and "val_loss" in r]
    return {k[4:]: v for k, v in record.items() if k.startswith("val_")}


@pytest.mark.parametrize(
    ("name", "step", "keys"),
    [
        ("lm", 40, {"loss", "perplexity"}),
        ("mlm", 20, {"loss", "perplexity"}),
        ("classify", 20, {"loss", "accuracy"}),
        ("seq2seq", 20, {"loss", "exact_match", "token_accuracy"}),
    ],
)
def test_eval_of_a_checkpoint_equals_the_trainers_validation(
    cli, lm_run, task_runs, name, step, keys
):
    run_dir = lm_run[0] if name == "lm" else task_runs[name]
    ckpt = run_dir / "checkpoints" / f"step-{step:06d}"
    # the trainer evaluated eval_batches=2 batches of batch_size=8 of the run's validation data
    result = cli.run("eval", "--checkpoint", ckpt, "--batches", "2", "--batch-size", "8")
    assert result.code == 0, result.err
    report = json.loads((ckpt / "eval.json").read_text())
    assert set(report["metrics"]) == keys
    assert report["metrics"] == pytest.approx(logged(cli, run_dir, step), rel=1e-6)
    assert report["checkpoint"] == str(ckpt) and report["split"] == "validation"
    width = max(map(len, keys))
    for key, value in report["metrics"].items():
        assert f"\n  {key:<{width}}  {value:.6g}\n" in result.out
    assert result.out.rstrip().endswith(f"wrote {ckpt / 'eval.json'}")


def test_eval_of_a_run_folder_uses_its_best_checkpoint(cli, lm_run, tmp_path):
    run_dir = lm_run[0]
    newest = sorted((run_dir / "checkpoints").iterdir())[-1]
    best = json.loads((newest / "trainer.json").read_text())["best"]["step"]
    kept = [int(p.name[5:]) for p in (run_dir / "checkpoints").iterdir()]
    assert best in kept
    result = cli.run(
        "eval", "--checkpoint", run_dir, "--json", tmp_path / "m.json", "--batch-size", "8"
    )
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["checkpoint"] == str(run_dir / "checkpoints" / f"step-{best:06d}")
    assert report["metrics"] == pytest.approx(logged(cli, run_dir, best), rel=1e-6)
    best_loss = min(r["val_loss"] for r in cli.metrics(run_dir) if "val_loss" in r)
    assert report["metrics"]["loss"] == pytest.approx(best_loss, rel=1e-6)


def by_hand(model, task, examples):
    """(loss, accuracy) one example at a time, without eval's batching: the loss is the mean
    over every scored token (every example for a classifier)."""
    tok, total, count, right = model.tokenizer, 0.0, 0, 0
    with torch.no_grad():
        for ex in examples:
            if task == "classify":
                label, text = ex
                logits = model(torch.tensor([[tok.bos_id, *tok.encode(text), tok.eos_id]])).logits
                target = torch.tensor([model.config.extra["labels"].index(label)])
                total += float(F.cross_entropy(logits, target))
                count, right = count + 1, right + int(logits.argmax() == target)
            elif task == "seq2seq":
                source, target = ex
                ids = tok.encode(target)
                out = model(
                    torch.tensor([[*tok.encode(source), tok.eos_id]]),
                    decoder_input_ids=torch.tensor([[tok.bos_id, *ids]]),
                )
                labels = torch.tensor([*ids, tok.eos_id])
                total += float(F.cross_entropy(out.logits[0], labels, reduction="sum"))
                count += len(labels)
            else:  # lm: a window of ids; each token predicts the next
                logits = model(ex[None]).logits[0]
                total += float(F.cross_entropy(logits[:-1], ex[1:], reduction="sum"))
                count += len(ex) - 1
    return total / count, right / count


def sixty(task, folder, tok):
    """60 examples of ``task`` in a file (with a header row), and the examples by hand."""
    if task == "classify":
        data = load_dataset("is_sorted", "validation", num_examples=60, max_length=6)
        path = folder / "dev.csv"
        path.write_text("label,text\n" + "".join(f"{a},{b}\n" for a, b in data.examples))
        return path, data.examples
    if task == "seq2seq":
        data = load_dataset("reverse", "validation", num_examples=60, max_length=5)
        path = folder / "dev.tsv"
        path.write_text("source\ttarget\n" + "".join(f"{a}\t{b}\n" for a, b in data.examples))
        return path, data.examples
    text = ("the mat sat on the cat.\n" * 40)[:950]  # <BOS> + 950 + <EOS>: 59 x 16 + 8 tokens
    path = folder / "dev.txt"
    path.write_text(text)
    stream = torch.tensor([tok.bos_id, *tok.encode(text), tok.eos_id])
    return path, list(stream.split(16))  # the windows of max_len 16


@pytest.mark.parametrize("task", ["classify", "seq2seq", "lm"])
def test_eval_counts_every_example_of_a_smaller_last_batch(cli, lm_run, task_runs, tmp_path, task):
    run_dir = lm_run[0] if task == "lm" else task_runs[task]
    ckpt = sorted((run_dir / "checkpoints").iterdir())[-1]
    model = load_model(ckpt).eval()
    data, examples = sixty(task, tmp_path, model.tokenizer)
    assert len(examples) == 60
    for batches, n in ([], 60), (["--batches", "1"], 32):  # 32 + 28, or the first 32
        result = cli.run(
            "eval", "--checkpoint", ckpt, "--data", data,
            "--batch-size", "32", *batches, "--json", tmp_path / "m.json",
        )  # fmt: skip
        assert result.code == 0, result.err
        report = json.loads((tmp_path / "m.json").read_text())
        assert report["examples"] == n
        unit = "windows of at most 16 tokens" if task == "lm" else "examples"
        counted = f"{n} {unit}" if n == 60 else f"the first {n} of 60 {unit}"
        assert f"(validation, {counted}):" in result.out
        assert report["examples_in_split"] == 60
        loss, accuracy = by_hand(model, task, examples[:n])
        assert report["metrics"]["loss"] == pytest.approx(loss, rel=1e-5)
        if task == "classify":
            assert report["metrics"]["accuracy"] == pytest.approx(accuracy)


def test_load_model_of_a_run_folder_is_its_best_checkpoint(lm_run, tmp_path):
    """load_model accepts what --checkpoint accepts: a run folder gives its best checkpoint."""
    run_dir = lm_run[0]
    newest = sorted((run_dir / "checkpoints").iterdir())[-1]
    best = json.loads((newest / "trainer.json").read_text())["best"]["step"]
    want = load_model(run_dir / "checkpoints" / f"step-{best:06d}")
    got = load_model(run_dir)
    for (name, a), (_, b) in zip(want.state_dict().items(), got.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert got.tokenizer is not None
    (tmp_path / "checkpoints").mkdir()
    with pytest.raises(ValueError, match="a run folder with no checkpoint yet"):
        load_model(tmp_path)
