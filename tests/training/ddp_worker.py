"""Run by tests/training/test_torchrun.py under torchrun (or alone): train a tiny GPT on a
fixed text file, whose tokens the processes share through one token cache; the test compares
its final checkpoint, its losses and the examples it saw, and counts who encoded the file."""

import contextlib
import faulthandler
import json
import os
import sys
from pathlib import Path

import torch

import glassformer.data.token_cache as token_cache
from glassformer import DecoderLM, preset
from glassformer.data import load_dataset
from glassformer.tokenizers import CharTokenizer
from glassformer.training import TrainConfig, Trainer
from glassformer.training.trainable import add_run_lora

faulthandler.enable()  # an abort (SIGABRT) prints every thread's Python stack to stderr
out, strategy, steps, resume = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
stop_at = int(sys.argv[5]) if len(sys.argv) > 5 else None  # end the process after this save
torch.set_num_threads(1)
# random letters: no two 16-character windows are alike, so "who saw what" is decidable
g = torch.Generator().manual_seed(0)
text = "".join(chr(97 + int(i)) for i in torch.randint(0, 20, (12_000,), generator=g))
# every process writes the same file (whole, by a rename) and reads it as an lm split: the
# first into the cache folder encodes it, the other waits for its token file (token_cache.py)
corpus = out / "toy.txt"
(out / f"toy.txt.{os.getpid()}").write_text(text)
os.replace(out / f"toy.txt.{os.getpid()}", corpus)
data = load_dataset(str(corpus), task="lm", cache=str(out / "tokens"))
encode = token_cache._encode


def counted(*args):
    """Encode, leaving a file that says which process did."""
    (out / f"encoded-by-{os.environ.get('RANK', '0')}-{os.getpid()}").touch()
    return encode(*args)


token_cache._encode = counted
tok = CharTokenizer().train(text)
torch.manual_seed(0)
# 1031 rows: more than the tokenizer needs, as a model whose vocabulary has room to spare
model = DecoderLM(preset("tiny", vocab_size=1031, max_len=16, d_model=32, n_layer=2))
config = TrainConfig(
    steps=steps, batch_size=8, grad_accum=2, warmup=2, save_every=3, eval_every=0,
    log_every=1, strategy=strategy, seed=3,
    optimizer=os.environ.get("WORKER_OPTIMIZER", "adamw"),  # test_torchrun.py's choices
    lora_rank=int(os.environ.get("WORKER_LORA_RANK", "0")),
)  # fmt: skip
add_run_lora(model, config)  # LoRA's adapters, where Run.build adds them
trainer = Trainer(model, tok, data, None, config, out / "run", progress=False)
seen = []
draw = trainer.train_stream.batch


def recording(k, rank=0, world_size=1):
    batch = draw(k, rank, world_size)
    seen.append(batch["input_ids"])
    return batch


trainer.train_stream.batch = recording
save = trainer.save


class Stopped(BaseException):
    """Raised right after the checkpoint at ``stop_at``: it leaves ``fit`` as ``sys.exit``
    would (past its ``except Exception``; its ``finally`` releases the run lock)."""


def save_then_maybe_stop():
    path = save()  # ends at a barrier: every process has the checkpoint's step
    if trainer.step == stop_at:  # like a kill right after this checkpoint
        raise Stopped
    return path


trainer.save = save_then_maybe_stop
with contextlib.suppress(Stopped):
    trainer.fit(resume=resume == "resume")
cluster = trainer.cluster
torch.save(torch.cat(seen), out / f"seen-{cluster.rank}.pt")
if cluster.is_main and trainer.step == steps:  # the parameters are in the final checkpoint
    (out / "done.json").write_text(json.dumps({"step": trainer.step}))
# Every process ends the same way, whether it stopped at stop_at or not: it meets the others,
# ends the process group, and leaves without the interpreter's shutdown (os._exit). At
# shutdown a gloo worker thread may still be releasing a finished collective whose tensors
# belong to Python objects; it needs the GIL, Python ends such a thread with pthread_exit, and
# unwinding it through a C++ destructor calls std::terminate ("terminate called without an
# active exception", SIGABRT). destroy_process_group does not join gloo's threads (gloo has no
# shutdown of its own, and the sharded model still holds the group). Everything the test reads
# is written and closed above.
if cluster.distributed:
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
