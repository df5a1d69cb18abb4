"""training/memory.py: after reuse_freed_memory() a large tensor comes from malloc's heap and
stays there when freed, ready for the next step; before it, it was mapped and unmapped.
Checked with glibc's own counters (mallinfo2) in a fresh process."""

import ctypes
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "mallinfo2")

SCRIPT = """
import ctypes, json, torch
from glassformer.training.memory import reuse_freed_memory

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info

def mb():  # MiB, as floats: rounding down to whole MiB can lose the 64 MiB block's last MiB
    i = libc.mallinfo2()
    return {"mapped": i.hblkhd / 2**20, "in_heap": i.uordblks / 2**20,
            "free_in_heap": i.fordblks / 2**20}

out = {}
for when in ("before", "after"):
    if when == "after":
        out["applied"] = reuse_freed_memory()
    t = torch.ones(16 << 20)  # 64 MB
    out[when + "_held"] = mb()
    del t
    out[when + "_freed"] = mb()
print(json.dumps(out))
"""


@pytest.mark.skipif(not GLIBC, reason="mallinfo2 is glibc's; elsewhere the call is a no-op")
def test_large_blocks_are_kept_for_reuse():
    import json

    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert r["before_held"]["mapped"] >= 64  # glibc's default: its own mapping ...
    assert r["before_freed"]["mapped"] < 64  # ... returned on free
    assert r["applied"] is True
    assert r["after_held"]["mapped"] < r["before_freed"]["mapped"] + 1  # no new mapping
    # from the heap instead (the heap may grow by less: it can reuse space freed earlier)
    assert r["after_held"]["in_heap"] >= r["before_held"]["in_heap"] + 63.9
    assert r["after_freed"]["free_in_heap"] >= 64  # kept after free, not trimmed


def test_the_trainer_can_leave_malloc_alone(monkeypatch):
    """TrainConfig(reuse_memory=False) does not call it."""
    from glassformer import DecoderLM, preset
    from glassformer.data import TextDataset
    from glassformer.tokenizers import CharTokenizer
    from glassformer.training import TrainConfig, Trainer, trainer

    calls = []
    monkeypatch.setattr(trainer, "reuse_freed_memory", lambda: calls.append(1))
    tok = CharTokenizer().train("abc")
    data = TextDataset("toy", "lm", "train", ["abc" * 50])
    model = DecoderLM(preset("tiny", vocab_size=tok.vocab_size, max_len=8, d_model=16))
    Trainer(model, tok, data, None, TrainConfig(steps=1, device="cpu", reuse_memory=False))
    assert calls == []
    Trainer(model, tok, data, None, TrainConfig(steps=1, device="cpu"))
    assert calls == [1]
