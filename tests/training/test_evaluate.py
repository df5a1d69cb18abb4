"""Validation metrics count every example: a smaller last batch, and every batch once when
the batches are shared out between processes."""

import pytest
import torch
import torch.nn.functional as F

from glassformer import DecoderLM, preset
from glassformer.data import TextDataset, encode_dataset, make_collate
from glassformer.tokenizers import CharTokenizer
from glassformer.training import BatchStream, TrainConfig, Trainer, evaluate
from glassformer.training.distributed import Cluster

TEXT = "to be or not to be, that is the question.\n" * 4  # <BOS> + 168 + <EOS>: 10 windows of 17
TOK = CharTokenizer().train([TEXT])
DATA = TextDataset("text", "lm", "validation", [TEXT])


def model():
    torch.manual_seed(0)
    config = dict(vocab_size=TOK.vocab_size, d_model=16, n_head=2, n_layer=1, max_len=17)
    return DecoderLM(preset("tiny", **config, dropout=0.0)).eval()


def by_hand(lm):
    """(sum of the next-token losses, number of scored tokens) of every window, one by one."""
    stream = torch.tensor([TOK.bos_id, *TOK.encode(TEXT), TOK.eos_id])
    total, count = 0.0, 0
    with torch.no_grad():
        for window in stream.split(17):
            logits = lm(window[None]).logits[0]
            total += float(F.cross_entropy(logits[:-1], window[1:], reduction="sum"))
            count += len(window) - 1
    return total, count


def test_the_trainers_validation_counts_a_smaller_last_batch():
    lm = model()
    config = TrainConfig(task="lm", steps=1, batch_size=4, eval_batches=20, log_every=1)
    trainer = Trainer(lm, TOK, DATA, DATA, config, run_dir=None, progress=False)
    assert len(trainer.val_stream) == 3  # 4 + 4 + 2 windows
    total, count = by_hand(lm)
    assert trainer.evaluate()["loss"] == pytest.approx(total / count, rel=1e-5)


class Recorder(Cluster):
    """Process ``rank`` of ``world_size``: its sums are recorded, not added up."""

    def sum(self, values):
        self.sums = values
        return values


def test_shared_out_batches_are_each_counted_once(monkeypatch):
    lm = model()
    encoded = encode_dataset(DATA, TOK, "lm", max_len=17)
    stream = BatchStream(encoded, make_collate("lm", TOK), 2, 0, shuffle=False, drop_last=False)
    assert len(stream) == 5
    ran, batch = [], stream.batch
    monkeypatch.setattr(stream, "batch", lambda k: ran.append(k) or batch(k))
    sums = []
    for rank in range(3):  # 5 batches over 3 processes: 0, 1, 2 shared, 3 and 4 run by all
        cluster = Recorder(rank=rank, world_size=3)
        ran.clear()
        evaluate(lm, "lm", stream, 5, torch.device("cpu"), cluster=cluster)
        assert ran == [rank, 3, 4]  # the same number of forward passes in every process
        sums.append(cluster.sums)
    total, count = by_hand(lm)
    assert sum(s[1] for s in sums) == count
    assert sum(s[0] for s in sums) == pytest.approx(total, rel=1e-5)
