"""The built-in ``induction`` task and config: a decoder trains on it from the command line, and
``glassformer train --config induction`` grows an induction head in layer 1, which attends
from position t to (previous occurrence of the token at t) + 1 (Olsson et al. 2022)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import glassformer.inspect._draw as draw
from glassformer import load_model
from glassformer.data import load_dataset
from glassformer.models import DecoderLM
from glassformer.safe_write import replace_file


def test_a_decoder_trains_on_the_induction_task(cli, tmp_path):
    out = tmp_path / "run"
    result = cli.run(
        "train", "--data", "induction", "--out", out, "--steps", "2", *cli.TINY,
        "--set", "data.num_examples=64", "--set", "data.total_length=14",
        "--set", "data.max_length=7", "--set", "sample.max_new_tokens=0",
    )  # fmt: skip
    assert result.code == 0, result.err
    run = json.loads((out / "run.json").read_text())
    assert (run["task"], run["data"]) == ("lm", "induction")
    assert type(load_model(out / "checkpoints" / "step-000002")) is DecoderLM


def induction_scores(model, texts: list[str]) -> dict[str, float | list[float]]:
    """Mean next-token loss on each text's first copy of its string and on the repeats after
    the first repeated symbol; for each head, the attention from t to (each previous occurrence
    of x_t) + 1 in layer 1 (induction) and from t to t - 1 in layer 0 (previous token), summed
    over those keys and averaged over the queries whose token occurred before."""
    tok = model.tokenizer
    ids = torch.tensor([tok.encode(t, add_bos=True, add_eos=True) for t in texts])  # (B, T)
    with torch.no_grad():
        out, cache = model.run_with_cache(ids)
    nll = -out.logits.log_softmax(-1)[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]  # (B, T-1)
    first, repeats, induction, previous, queries = [], [], 0.0, 0.0, 0
    for b, text in enumerate(texts):
        n = next(k for k in range(1, len(text)) if text == (text[:k] * len(text))[: len(text)])
        first += nll[b, 1:n].tolist()  # nll[b, j] scores symbol j (position j + 1)
        repeats += nll[b, n + 1 : len(text)].tolist()
        x = ids[b]
        for t in range(n + 1, len(text) + 1):  # positions whose symbol occurred before
            after = [p + 1 for p in range(t) if x[p] == x[t]]
            induction = induction + cache["pattern", 1][b, :, t, after].sum(-1)
            previous = previous + cache["pattern", 0][b, :, t, t - 1]
            queries += 1
    return {
        "first": sum(first) / len(first),
        "repeats": sum(repeats) / len(repeats),
        "induction": (induction / queries).tolist(),
        "previous": (previous / queries).tolist(),
    }


@pytest.mark.slow
def test_the_induction_config_grows_an_induction_head(cli, tmp_path, monkeypatch):
    """The built-in config cut to 500 steps (about 15 s on one thread): the repeats are
    predicted (loss far below the first copy's, which is near ln 62), a head of layer 1 puts
    most of its attention on (previous occurrence) + 1, and greedy decoding continues a
    repeat."""
    out = tmp_path / "induction"
    result = cli.run(
        "train", "--config", "induction", "--out", out, "--steps", "500",
        "--set", "data.num_examples=16000", "--set", "train.eval_every=500",
        "--set", "train.save_every=500",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "QUICKbrownQUICKbrownQUICKbrownQU" in result.out  # the config's greedy sample
    model = load_model(out / "checkpoints" / "step-000500").eval()
    texts = list(load_dataset("induction", "validation", num_examples=128, seed=1))
    scores = induction_scores(model, texts)
    assert scores["first"] > 3.5 and scores["repeats"] < 0.5, scores
    assert max(scores["induction"]) > 0.7, scores  # an induction head in layer 1
    assert max(scores["previous"]) > 0.5, scores  # a previous-token head in layer 0
    # inspect --circuits reads the model as it draws; this test checks what it reads (index.md),
    # so its 14 pictures are written as empty files, undrawn: the drawing is checked by
    # tests/inspect/test_cli_circuits.py and by the walk of docs/guide/circuits.md, whose
    # command this is
    monkeypatch.setattr(draw, "replace_file", lambda path, _: replace_file(path, Path.touch))
    _circuits_find_the_induction_head(cli, out, model, scores, tmp_path / "circuits")
    _patching_follows_the_copied_symbol(model)


def _circuits_find_the_induction_head(cli, run, model, scores, pictures):
    """The worked example of docs/guide/circuits.md: direct logit attribution of the
    predicted symbol picks a layer-1 head, one of those the attention pattern calls
    induction heads; ablating the layer-1 heads destroys the repeats (the loss rises to at
    least the first copy's), and the head's full OV circuit copies (positive copying score on
    the alphabet)."""
    from glassformer.circuits import (
        ablate,
        circuit_cache,
        copying_score,
        full_ov_circuit,
        logit_attribution,
    )

    text = "QUICKbrownQUICKbrownQUI"
    result = cli.run(
        "inspect", "--checkpoint", run, "--text", text, "--out", pictures, "--circuits"
    )  # fmt: skip
    assert result.code == 0, result.err
    index = (pictures / "index.md").read_text()
    assert "Analysed: the logit of 'C'" in index  # the model predicts the repeat

    tok = model.tokenizer
    ids = torch.tensor([tok.encode(text, add_bos=True)])
    out, cache = circuit_cache(model, ids)
    answer = int(out.logits[0, -1].argmax())
    assert tok.id_to_token(answer) == "C"
    heads = logit_attribution(cache, answer).heads()[:, :, 0]  # (layers, heads)
    layer, head = divmod(int(heads.argmax()), heads.shape[1])
    assert layer == 1 and scores["induction"][head] > 0.5, (heads, scores)
    assert heads[1].sum() > 2 * heads[0].abs().sum()  # layer 1 writes the answer

    def repeat_loss(logits):  # the symbols after "QUICKbrown", each read from its earlier copy
        return torch.nn.functional.cross_entropy(logits[0, 10:-1], ids[0, 11:]).item()

    clean = repeat_loss(out.logits)
    one = repeat_loss(ablate(model, ids, heads=[(layer, head)]).logits)
    every = repeat_loss(ablate(model, ids, heads=[(1, h) for h in range(4)]).logits)
    assert clean < one < every and every > 3.5, (clean, one, every)
    symbols = torch.tensor(tok.encode("QUICKbrownXYZ0123456789"))
    assert copying_score(full_ov_circuit(model, layer, head, symbols)) > 0.5


def _patching_follows_the_copied_symbol(model):
    """The indirect-object-style study of docs/guide/circuits.md: "QUICKbrownQUI" against
    "QUIZKbrownQUI", the logit difference of 'C' and 'Z' as the metric. The difference enters
    the stream at the changed symbol (position 4 after <BOS>) and nowhere before it; the
    layer-1 heads carry it (their z), much of it along their direct path to the logits, while
    the layer-0 heads carry little and have no direct share."""
    from glassformer.circuits import (
        logit_difference,
        patch_blocks,
        patch_heads_every,
        patch_path_senders,
    )

    clean, corrupted = model.to_tokens("QUICKbrownQUI"), model.to_tokens("QUIZKbrownQUI")
    metric = logit_difference(model, "C", "Z")
    with torch.no_grad():
        assert metric(model(clean)) > 0 > metric(model(corrupted))
    args = (model, clean, corrupted, metric)
    resid = patch_blocks(*args, normalize=True, progress=False)[0]  # resid_pre: (L, T)
    assert (resid[:, 4] > 0.99).all() and (resid[:, :4] == 0).all(), resid
    z = patch_heads_every(*args, normalize=True, progress=False)[0]  # z: (L, H)
    assert z[1].sum() > 0.5 and z[0].abs().max() < z[1].max(), z
    direct = patch_path_senders(*args, normalize=True, progress=False)  # (L, H)
    assert direct[1].sum() > 0.25 and direct[0].abs().max() < 0.05, direct
