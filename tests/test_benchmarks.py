"""The benchmark harness (benchmarks/): its smallest configurations run and write the expected
JSON (format only: keys present, numbers positive; no speed is asserted), and the peers it
times compute the same function as glassformer, so that it compares like with like."""

import dataclasses
import json
import math
import statistics
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the benchmarks package sits beside src/, not installed

from benchmarks import (  # noqa: E402
    bench_encoder,
    bench_fast_paths,
    bench_graph_attention,
    bench_hooks,
    bench_recurrence,
    bench_train,
    common,
    encoder_peers,
    graph_attention_case,
    graph_attention_report,
    peers,
    processes,
    recurrence_case,
    train_report,
)

from glassformer.interop.huggingface import to_huggingface  # noqa: E402

# in this process (no subprocess per case: seconds instead of a minute); one test below runs a
# case in its own process, the way the benchmarks do by default
SMOKE = ["--quick", "--in-process", "--threads", "1", "--seconds", "0.05", "--min-steps", "2"]


@pytest.fixture(autouse=True)
def keep_threads():
    n = torch.get_num_threads()  # the benchmarks set torch's thread count
    yield
    torch.set_num_threads(n)


def positive(x) -> bool:
    return isinstance(x, int | float) and math.isfinite(x) and x > 0


def check_timing(timing: dict) -> None:
    assert positive(timing["median_ms"])
    assert timing["min_ms"] <= timing["median_ms"] <= timing["max_ms"]
    assert timing["steps"] >= 2


def test_train_smoke(tmp_path):
    out = tmp_path / "train.json"
    bench_train.main([*SMOKE, "--contexts", "64", "--batches", "2", "--out", str(out)])
    data = json.loads(out.read_text())
    assert {"environment", "matmul_peak", "budget", "peers", "shapes", "scaling"} <= set(data)
    assert positive(data["matmul_peak"]["float32"]["gflops"])
    tiny = data["shapes"]["tiny"]
    assert set(tiny["results"]) == {"glassformer", "hf", "torch.nn"}
    for result in tiny["results"].values():
        assert "error" not in result, result.get("error")
        check_timing(result["timing"]["step"])
        check_timing(result["timing"]["fwd_bwd"])
        for key in ("tokens_per_s_step", "mfu_step", "mfu_fwd_bwd", "peak_rss_mb"):
            assert positive(result[key]), key
        assert result["faults_per_step"] >= 0
        assert abs(result["first_loss"] - math.log(65)) < 0.5  # random init: about ln V
    for ratios in [*tiny["ratios"].values(), *tiny["ratios_reuse"].values()]:
        assert all(positive(ratios[k]) for k in ("speed_step", "speed_fwd_bwd", "speed_rounds"))
        # in one process the peak RSS may not grow past earlier tests': no memory ratio then
        assert ratios["memory"] is None or ratios["memory"] >= 0
    assert set(tiny["reuse"]) == {"hf", "torch.nn"} and data["glassformer_reuse_memory"]
    (context_row,) = data["scaling"]["context"]
    (batch_row,) = data["scaling"]["batch"]
    assert context_row["glassformer"] == tiny["results"]["glassformer"]  # reused, not re-run
    assert batch_row["batch"] == 2 and positive(batch_row["speed_step"])
    assert positive(batch_row["hf"]["tokens_per_s_step"])
    run = tiny["paired"]  # every case and a matmul, their blocks interleaved
    cases = {"glassformer", "hf", "torch.nn", "hf+reuse", "torch.nn+reuse", "matmul"}
    assert run["reuse_memory"] and set(run["blocks"]) == cases
    assert all(k >= 1 for k in run["steps_per_block"].values())
    for case, blocks in run["blocks"].items():
        timed = {"step"} if case == "matmul" else {"step", "fwd_bwd"}
        assert set(blocks) == timed | {"faults"}
        assert all(len(blocks[k]) >= 2 and all(map(positive, blocks[k])) for k in timed)
        assert len(blocks["faults"]) == len(blocks["step"]) and min(blocks["faults"]) >= 0
    fig = run["figures"]
    assert positive(fig["peak_gflops"]) and "speed" not in fig["glassformer"]
    for case in cases - {"matmul"}:
        for key in ["mfu_step", "mfu_fwd_bwd"] + ([] if case == "glassformer" else ["speed"]):
            r = fig[case][key]
            assert r["min"] <= r["median"] <= r["max"] and positive(r["median"]), (case, key)
        assert fig[case]["fwd_bwd_ms"] <= fig[case]["step_ms"] * 1.5
        assert fig[case]["faults_per_step"] >= 0


def test_hooks_smoke(tmp_path):
    """One paired round of every case at the tiny shape; GPT-2 small is the issue's shape."""
    assert bench_hooks.SHAPES["gpt2-small"] == common.Shape(12, 12, 768, 256, 4, 50257)
    out = tmp_path / "hooks.json"
    bench_hooks.main(["--quick", "--threads", "1", "--seconds", "0", "--rounds", "1",
                      "--out", str(out)])  # fmt: skip
    data = json.loads(out.read_text())
    assert data["shape"]["name"] == "tiny" and not data["reuse_memory"]
    fig = data["figures"]
    assert set(fig) == set(data["blocks_ms"]) == {"plain", "all", "no-result", "stream"}
    assert all(len(ms) == 1 and positive(ms[0]) for ms in data["blocks_ms"].values())
    assert fig["plain"]["vs_plain"] is None and fig["plain"]["cache_mb"] == 0
    for case in ("all", "no-result", "stream"):
        r = fig[case]["vs_plain"]
        assert r["min"] <= r["median"] <= r["max"] and positive(r["median"])
    # what is kept: the heads' terms (B, T, H, C) and A are the largest entries
    assert fig["all"]["cache_mb"] > fig["no-result"]["cache_mb"] > fig["stream"]["cache_mb"] > 0


def test_fast_paths_smoke(tmp_path, monkeypatch):
    """One paired round of each fast path on vs off: packing at the tiny shape, layout on a
    small GPT in place of GPT-2 small."""
    assert common.Shape(12, 12, 768, 1024, 1, 50257) == bench_fast_paths.GPT2_SMALL
    monkeypatch.setattr(bench_fast_paths, "GPT2_SMALL", common.Shape(2, 4, 64, 32, 1, 256))
    monkeypatch.setattr(bench_fast_paths, "BLOCK_S", 0.02)  # blocks of a few passes
    one = ["--threads", "1", "--seconds", "0", "--rounds", "1"]
    tiny = bench_fast_paths.main(["--quick", *one, "--out", str(tmp_path / "tiny.json")])
    layout = bench_fast_paths.main(
        ["--paths", "layout", "--shapes", "base", *one, "--out", str(tmp_path / "layout.json")]
    )
    assert json.loads((tmp_path / "tiny.json").read_text()) == tiny
    assert set(tiny["cases"]) == {"packing/tiny/encoder-padded"}
    assert tiny["notes"] == ["layout: skipped, measured at GPT-2 small only (--shapes base)"]
    assert set(layout["cases"]) == {"layout/base/decode-step"}
    for case in [*tiny["cases"].values(), *layout["cases"].values()]:
        assert "error" not in case, case.get("error")
        assert case["difference"] <= 1e-5  # on and off computed the same outputs
        assert positive(case["on_ms"]) and positive(case["off_ms"]) and case["rounds"] == 1
        s = case["speedup"]
        assert s["min"] == s["median"] == s["max"]  # one round
        ms = case["blocks_ms"]
        assert s["median"] == pytest.approx(ms["off"][0] / ms["on"][0])
        assert case["verdict"] == ("earns" if s["median"] >= 1.05 else "does not")
    relay = layout["cases"]["layout/base/decode-step"]["relay_ms"]
    assert 0 < relay["min"] <= relay["median"] <= relay["max"]


def test_recurrence_smoke(tmp_path, monkeypatch):
    """Attention, LSTM and GRU at two small T, the two projections at one, two paired rounds;
    the default shapes are the documented ones."""
    assert bench_recurrence.SIZES == (64, 128, 256, 512, 1024, 2048, 4096)
    shape = (bench_recurrence.D_MODEL, bench_recurrence.N_HEAD, bench_recurrence.BATCH)
    assert shape == (256, 8, 8)
    monkeypatch.setattr(bench_recurrence, "BLOCK_S", 0.005)  # blocks of a step or two
    out = tmp_path / "recurrence.json"
    argv = ["--quick", "--threads", "1", "--d-model", "32", "--heads", "4", "--batch", "2",
            "--sizes", "8,16", "--projection-sizes", "8", "--rounds", "2", "--seconds", "0"]
    data = bench_recurrence.main([*argv, "--out", str(out)])  # fmt: skip
    assert json.loads(out.read_text()) == data and data["argv"] == argv  # --out left out
    c = 32
    parts = data["parts"]  # parameters at the same width: weights and biases
    assert parts["attention"]["params"] == 4 * c * c + 4 * c  # [W^Q; W^K; W^V], W^O
    assert parts["torch-mha"]["params"] == 4 * c * c + 4 * c  # the same layer in torch.nn
    assert parts["lstm"]["params"] == 8 * c * c + 8 * c  # 4 gates, input and hidden
    assert parts["gru"]["params"] == 6 * c * c + 6 * c  # 3 gates
    assert parts["merged"]["params"] == parts["per-head"]["params"] == 3 * c * c + 3 * c
    assert (parts["merged"]["matmuls"], parts["per-head"]["matmuls"]) == (1, 4)
    assert [r["t"] for r in data["rows"]] == [8, 16]
    for row in data["rows"]:
        t, cases = row["t"], row["cases"]
        assert row["tokens"] == 2 * t and row["rounds"] == 2
        assert set(cases) == set(recurrence_case.LAYERS)
        assert cases["attention"]["vs_attention"] is None
        for name in ("attention", "torch-mha"):
            f = cases[name]
            assert (f["sequential_steps"], f["max_path_length"]) == (1, 1)
            assert f["macs_per_token"] == 4 * c * c + (t + 1) * c
        for name in ("torch-mha", "lstm", "gru"):
            f = cases[name]
            if name != "torch-mha":
                assert (f["sequential_steps"], f["max_path_length"]) == (t, t - 1)
            r = f["vs_attention"]
            assert r["min"] <= r["median"] <= r["max"] and positive(r["median"])
            blocks = zip(f["blocks_ms"], cases["attention"]["blocks_ms"], strict=True)
            assert r["median"] == pytest.approx(statistics.median(a / b for a, b in blocks))
        for f in cases.values():
            assert positive(f["ms"]) and 0 < f["forward_ms"] < f["ms"]
            assert f["us_per_token"] == pytest.approx(1000 * f["ms"] / (2 * t))
    (proj,) = data["projection_rows"]
    assert proj["t"] == 8 and proj["cases"]["merged"]["vs_merged"] is None
    assert positive(proj["cases"]["per-head"]["vs_merged"]["median"])


def test_recurrence_per_head_projections_are_the_merged_one_regrouped():
    """The two projections compute the same queries, keys and values (the merged Linear split
    by head), and every layer timed maps inputs <= t to the output at t only."""
    torch.manual_seed(0)
    merged, _ = recurrence_case.build_layer("merged", 32, 4)
    heads = recurrence_case.PerHeadProjection.from_merged(merged, 4)
    x = torch.randn(2, 5, 32)
    qkv = merged(x).view(2, 5, 3, 4, 8)  # (B, T, Q|K|V, H, D)
    for h, y in enumerate(heads(x)):
        torch.testing.assert_close(y, qkv[:, :, :, h].reshape(2, 5, 24))
    for name in recurrence_case.LAYERS:
        _, forward = recurrence_case.build_layer(name, 32, 4)
        changed = x.clone()
        changed[:, 3] += 1.0  # a change at position 3 leaves the outputs at 0..2 alone
        with torch.no_grad():
            a, b = forward(x), forward(changed)
        torch.testing.assert_close(a[:, :3], b[:, :3])
        assert (a[:, 3:] - b[:, 3:]).abs().amin(-1).gt(0).all(), name  # and reaches 3..4


@pytest.mark.parametrize(
    "argv", [["--sizes", "64,x"], ["--sizes", "1"], ["--d-model", "30", "--heads", "4"],
             ["--rounds", "0"]],
)  # fmt: skip
def test_recurrence_bad_options_are_usage_errors(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench_recurrence.main([*argv, "--out", str(tmp_path / "out.json")])
    assert exit_info.value.code == 2 and "error: " in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()


def test_graph_attention_smoke(tmp_path, monkeypatch):
    """Both levels, the two --quick graphs, two small T: a window of 16 at T 512 takes the
    band kernel, as w 128 does from T 1024 at d_model 512 (the issue's shape)."""
    assert (graph_attention_case.D_MODEL, graph_attention_case.N_HEAD) == (512, 8)
    assert bench_graph_attention.SIZES == (1024, 2048, 4096, 8192, 16384)
    monkeypatch.setattr(graph_attention_case, "D_MODEL", 64)
    monkeypatch.setattr(graph_attention_case, "PREWARM_T", 64)
    out = tmp_path / "graph_attention.json"
    data = bench_graph_attention.main(
        [*SMOKE, "--sizes", "256,512", "--window", "16", "--out", str(out)]
    )
    assert json.loads(out.read_text()) == data and data["settings"]["sizes"] == [256, 512]
    assert set(data["levels"]) == {"layer", "attention"}
    for by_graph in data["levels"].values():
        assert set(by_graph) == {"window", "bigbird"}
        for res in by_graph.values():
            small, large = res["rows"]
            assert (small["t"], large["t"]) == (256, 512) and large["edges"] > small["edges"]
            assert small["sparse"]["path"] == "dense"  # T·S <= 2^16: dense is the fastest
            assert large["sparse"]["path"] == "local"  # the band kernel ran
            for row in res["rows"]:
                assert row["dense"]["sdpa"] != "math"  # torch's fused kernel, not T x T scores
                assert row["dense"]["mask_mb"] == row["t"] ** 2 / 2**20
                for peer in ("sparse", "dense"):
                    case = row[peer]
                    assert positive(case["ms"]) and case["min_ms"] <= case["ms"] <= case["max_ms"]
                    assert case["steps"] >= 2 and math.isfinite(case["mb"])  # in-process: any
                    assert case["rounds_ms"] == [case["ms"]]  # --quick: one round
                assert row["ratios"]["loss_rel_diff"] <= 1e-5  # the same function
                assert positive(row["ratios"]["speed"])
            s = res["scaling"]
            assert (s["from"], s["to"]) == (256, 512) and positive(s["time"])
            assert res["goals"] == {"t": 8192, "measured": False, "dense_oom_at": [],
                                    "sparse_oom_at": []}  # fmt: skip


def test_graph_attention_dense_peer_gets_the_graphs_mask(monkeypatch):
    monkeypatch.setattr(graph_attention_case, "MASK_CHUNK", 100)  # blocks of 1 to 3 rows
    for make in graph_attention_case.GRAPHS.values():
        g = make(4)
        for t in (1, 37, 64):
            assert torch.equal(graph_attention_case.dense_mask(g, t), g.mask(t))


def test_graph_attention_records_an_allocation_failure_as_oom(monkeypatch):
    def failing_steps(step, budget):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to ...")

    monkeypatch.setattr(graph_attention_case, "D_MODEL", 32)
    monkeypatch.setattr(graph_attention_case, "PREWARM_T", 64)
    monkeypatch.setattr(graph_attention_case, "timed", failing_steps)
    budget = {"warmup": 1, "warmup_s": 0, "min_steps": 1, "max_steps": 1, "seconds": 0}
    spec = {"level": "attention", "graph": "window", "window": 8, "t": 64, "peer": "dense"}
    result = graph_attention_case.run_case({**spec, "budget": budget})
    assert result["oom"].startswith("DefaultCPUAllocator: can't allocate memory")
    assert "ms" not in result and result["mask_mb"] == 64**2 / 2**20
    row = {"t": 8192, "sparse": {"ms": 1.0, "mb": 1.0}, "dense": result}
    row["ratios"] = graph_attention_report.compare(row["sparse"], row["dense"])
    goals = graph_attention_report.goals([row])
    assert goals["dense_oom_at"] == [8192] and goals["speed"]["met"] and goals["memory"]["met"]


def test_fast_paths_off_gives_the_reference_form_and_back():
    from glassformer.nn import EncoderBlock

    fp = bench_fast_paths
    small = common.Shape(2, 2, 16, 8, 4, 50)
    model, step = fp.build(fp.Case("packing", "tiny", "encoder-padded", small))
    linear = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert fp.packing_runs(model, step)  # the batch is padded
    assert {type(b) for b in model.blocks} == {EncoderBlock}  # one block, whichever path
    reference = step()
    assert model.fast_paths is None  # built with the reference code; the caller chooses
    with fp.switch(model, "packing", False):
        assert model.fast_paths is False and not fp.packing_runs(model, step)
    with fp.switch(model, "packing", True):
        assert model.fast_paths is True
        torch.testing.assert_close(step(), reference)
    assert model.fast_paths is None  # put back
    with fp.switch(model, "layout", True):
        assert all(w.stride() == (1, w.shape[0]) for w in linear)  # input-major
    assert all(w.is_contiguous() for w in linear)


def test_fast_paths_verdict_rule():
    verdict = bench_fast_paths.verdict
    assert verdict({"median": 1.20, "min": 1.10, "max": 1.30}) == "earns"
    assert verdict({"median": 1.10, "min": 1.01, "max": 1.20}) == "earns"  # median past 1.07
    assert verdict({"median": 1.06, "min": 1.01, "max": 1.20}) == "inside the spread"
    assert verdict({"median": 1.04, "min": 0.98, "max": 1.09}) == "inside the spread"
    assert verdict({"median": 1.06, "min": 1.055, "max": 1.07}) == "earns"  # every round above
    assert verdict({"median": 1.02, "min": 0.95, "max": 1.10}) == "does not"
    assert verdict({"median": 0.97, "min": 0.97, "max": 0.97}) == "does not"


NESTED_WARNING = "ignore:The PyTorch API of nested tensors is in prototype stage"


@pytest.mark.slow
@pytest.mark.filterwarnings(NESTED_WARNING)
def test_encoder_smoke(tmp_path):
    out = tmp_path / "encoder.json"
    bench_encoder.main([*SMOKE, "--reuse", "--out", str(out)])
    data = json.loads(out.read_text())
    tiny = data["shapes"]["tiny"]
    assert set(tiny["results"]) == {"glassformer", "torch.nn", "hf"}
    for case in tiny["results"].values():
        assert "error" not in case, case.get("error")
        for inputs in ("dense", "padded"):
            check_timing(case[inputs]["timing"]["forward"])
            for key in ("tokens_per_s", "mfu", "peak_rss_mb"):
                assert positive(case[inputs][key]), key
            assert case[inputs]["faults_per_step"] >= 0
    padded = tiny["results"]["torch.nn"]["padded"]
    assert {"fast", "nested"} <= set(padded["kernels"])  # torch.nn really took its fast path
    assert "sdpa" in tiny["results"]["glassformer"]["dense"]["kernels"]
    for ratios in tiny["ratios"].values():
        assert all(positive(r["speed"]) for r in ratios.values())
    fig = tiny["paired"]["figures"]  # every (peer, input), with and without reuse, interleaved
    peers = [*tiny["results"], *(f"{p}+reuse" for p in tiny["results"])]
    assert set(fig) == {f"{p}/{i}" for p in peers for i in ("dense", "padded")}
    assert data["paired_reuse"] is True
    for case, f in fig.items():
        assert positive(f["ms"]) and len(tiny["paired"]["blocks"][case]["step"]) >= 2
        assert f["faults_per_pass"] >= 0
        if not case.startswith("glassformer/"):
            assert f["speed"]["min"] <= f["speed"]["median"] <= f["speed"]["max"]
        # a peer + reuse is also compared with glassformer + reuse, in the same rounds
        both = "+reuse/" in case and not case.startswith("glassformer+")
        assert ("speed_reuse" in f) == both
        if both:
            r = f["speed_reuse"]
            assert r["min"] <= r["median"] <= r["max"] and positive(r["median"])


def test_isolated_case_runs_in_its_own_process():
    spec = {
        "peer": "glassformer",
        "shape": dataclasses.asdict(bench_train.SHAPES["tiny"].replace(n_layer=1, batch=2)),
        "threads": 1,
        "budget": dataclasses.asdict(common.Budget(warmup=1, warmup_s=0, min_steps=2)),
    }
    result = processes.run_isolated("benchmarks.train_case", spec)
    assert result["isolated"] is True
    check_timing(result["timing"]["step"])
    assert 0 < result["rss_after_import_mb"] < result["peak_rss_mb"]


def test_timing_and_table_format(capsys):
    t = common.Timing.of([0.003, 0.001, 0.002])
    assert (t.median_ms, t.min_ms, t.max_ms, t.steps) == (2.0, 1.0, 3.0, 3)
    assert common.fmt_timing(t.__dict__) == "2.0 (1.0-3.0)"
    common.print_table("T", ["peer", "ms"], [["a", "1.0"], ["bbb", "10.0"]], ["note"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "peer    ms" and lines[3] == "a      1.0" and lines[4] == "bbb   10.0"


# The peers compute the same function as glassformer (same weights copied in) -------------------
def _rename(key: str, stack: str) -> str:
    """glassformer parameter name -> the torch.nn peer's (stack: its TransformerEncoder)."""
    for ours, theirs in (
        ("embed.", "tok."),
        ("pos_embed.", "pos."),
        ("token_type_embed.", "segment."),
        ("ln_embed.", "norm."),
        ("blocks.", f"{stack}.layers."),
        ("ln_final.", f"{stack}.norm."),
    ):
        if key.startswith(ours):
            key = theirs + key[len(ours) :]
            break
    for ours, theirs in (
        (".attn.", ".self_attn."),
        ("mlp.fc1.", "linear1."),
        ("mlp.fc2.", "linear2."),
        ("ln1.", "norm1."),
        ("ln2.", "norm2."),
    ):
        key = key.replace(ours, theirs)
    return key


def _load_into_torch_peer(peer, ours, stack: str) -> None:
    state = {
        _rename(k, stack): v for k, v in ours.state_dict().items() if not k.startswith("unembed.")
    }
    for key in [k for k in state if ".q_proj." in k]:  # torch's in_proj: [W^Q; W^K; W^V]
        attn, _, kind = key.partition(".q_proj.")
        parts = [state.pop(f"{attn}.{p}.{kind}") for p in ("q_proj", "k_proj", "v_proj")]
        state[f"{attn}.in_proj_{kind}"] = torch.cat(parts)
    peer.load_state_dict(state, strict=True)


def test_train_peers_compute_the_same_loss():
    torch.manual_seed(0)
    shape = bench_train.SHAPES["tiny"].replace(n_layer=2)
    ids = torch.randint(0, shape.vocab, (3, shape.context))
    ours, loss_of = peers.build_glassformer(shape)
    hf, hf_loss_of = peers.build_hf(shape)
    hf.load_state_dict(to_huggingface(ours).state_dict())
    torch.testing.assert_close(hf_loss_of(hf, ids), loss_of(ours, ids))
    # the torch.nn peer is the same model too (tanh GELU passed as a callable)
    peer, peer_loss_of = peers.build_torch(shape)
    _load_into_torch_peer(peer, ours, "blocks")
    torch.testing.assert_close(peer_loss_of(peer, ids), loss_of(ours, ids))


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_encoder_peers_compute_the_same_hidden_states():
    torch.manual_seed(0)
    shape = encoder_peers.SHAPES["tiny"].replace(n_layer=2, batch=4)
    ids, mask = encoder_peers.make_batch(shape)
    ours, forward = encoder_peers.build_glassformer(shape)
    hf, hf_forward = encoder_peers.build_hf(shape)
    hf.load_state_dict(to_huggingface(ours).state_dict())
    peer, peer_forward = encoder_peers.build_torch(shape)
    _load_into_torch_peer(peer, ours, "layers")
    for model in (ours, hf, peer):
        model.eval()  # torch.nn's fast path runs in eval mode only
    real = mask.bool()
    with torch.no_grad():
        for m in (None, mask):
            expected = forward(ids, m)
            h_hf = hf_forward(ids, m)
            h_torch, pooled_torch = peer_forward(ids, m)
            keep = real if m is not None else torch.ones_like(real)  # padded rows may differ
            torch.testing.assert_close(h_hf.last_hidden_state[keep], expected.hidden_states[keep])
            torch.testing.assert_close(h_hf.pooler_output, expected.pooled)
            torch.testing.assert_close(h_torch[keep], expected.hidden_states[keep])
            torch.testing.assert_close(pooled_torch, expected.pooled)


def test_rounds_are_interleaved_and_the_fastest_is_kept():
    from benchmarks.common import best_of_rounds, fastest

    order, times = [], {"a": iter([30.0, 10.0, 20.0]), "b": iter([5.0, 7.0, 6.0])}

    def run_one(key):
        order.append(key)
        return {"timing": {"step": {"median_ms": next(times[key])}}}

    got = best_of_rounds(run_one, ["a", "b"], 3, lambda rs: fastest(rs, "step"))
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert got["a"]["timing"]["step"]["median_ms"] == 10.0 and got["a"]["rounds"] == [30, 10, 20]
    assert got["b"]["timing"]["step"]["median_ms"] == 5.0
    failed = fastest([{"error": "boom"}, {"timing": {"step": {"median_ms": 3.0}}}], "step")
    assert failed["rounds"] == [3.0]
    assert fastest([{"error": "boom"}], "step") == {"error": "boom"}


def test_paired_blocks_alternate_order_and_ratios_are_per_round(monkeypatch):
    from benchmarks import paired

    order = []
    clock = iter(range(1000))  # every perf_counter call one second later
    monkeypatch.setattr(paired.time, "perf_counter", lambda: float(next(clock)))
    faults = iter(range(0, 5000, 5))  # 5 more page faults at every look
    monkeypatch.setattr(paired, "minor_faults", lambda: next(faults))

    def a():
        order.append("a")
        return {"fwd_bwd": 0.25}

    runners = {
        "a": paired.LocalRunner(a, warmup=1),
        "b": paired.LocalRunner(lambda: order.append("b"), warmup=1),
    }
    got = paired.interleave(runners, seconds=0.0, min_blocks=3, block_s=0.5)
    # warm-up, one step each to size the blocks, then rounds a b | b a | a b
    assert order == ["a", "b", "a", "b", "a", "b", "b", "a", "a", "b"]
    assert got["steps_per_block"] == {"a": 1, "b": 1}
    # seconds become ms; the faults per step stay counts
    assert got["blocks"]["a"] == {"step": [1000.0] * 3, "faults": [5.0] * 3, "fwd_bwd": [250.0] * 3}
    assert got["blocks"]["b"] == {"step": [1000.0] * 3, "faults": [5.0] * 3}

    r = paired.per_block([12.0, 30.0, 44.0], [10.0, 20.0, 40.0])
    assert r == {"median": 1.2, "min": 1.1, "max": 1.5}


def test_faults_count_the_fresh_pages_a_step_touches():
    import mmap

    pages = 256  # 1 MiB of 4 KiB pages, mapped anew and written by every step

    def step():
        with mmap.mmap(-1, pages * mmap.PAGESIZE) as m:
            for i in range(pages):
                m[i * mmap.PAGESIZE] = 1  # the first touch of a page faults it in

    def quiet():
        return None

    from benchmarks import paired

    assert paired.run_block(step, 3)["faults"] >= pages
    budget = common.Budget(warmup=1, warmup_s=0, min_steps=3, seconds=0)
    assert common.measure(lambda: {"step": step() or 0.0}, budget)["faults_per_step"] >= pages
    assert paired.run_block(quiet, 3)["faults"] < pages  # a step that maps nothing


def test_paired_worker_process_serves_blocks_and_reports_failures():
    from benchmarks import paired

    shape = bench_train.SHAPES["tiny"].replace(n_layer=1, batch=2)
    spec = {"peer": "glassformer", "shape": dataclasses.asdict(shape), "threads": 1}
    runner = paired.ProcessRunner("benchmarks.train_case", spec)
    try:
        runner.wait()
        block = runner.block(2)
        assert set(block) == {"step", "faults", "fwd_bwd"}
        assert 0 < block["fwd_bwd"] <= block["step"] and block["faults"] >= 0
    finally:
        runner.close()
    bad = paired.ProcessRunner("benchmarks.train_case", {**spec, "peer": "nope"})
    with pytest.raises(RuntimeError, match="KeyError: 'nope'"):
        bad.wait()
    bad.close()


def test_paired_worker_killed_by_a_signal_is_named(tmp_path, monkeypatch):
    from benchmarks import paired

    # a worker that dies the way the OOM killer ends it (the spawned child inherits sys.path)
    (tmp_path / "killed_worker.py").write_text(
        "import os, signal\ndef make_paired_step(spec):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = paired.ProcessRunner("killed_worker", {"threads": 1})
    with pytest.raises(RuntimeError, match=r"status -9 \(out of memory\?"):
        runner.wait()
    runner.close()


def test_compare_gives_the_fastest_rounds_and_the_medians_of_rounds():
    def result(fastest_ms, rounds):
        timing = {"median_ms": fastest_ms}
        return {"timing": {"step": timing, "fwd_bwd": timing}, "rounds": rounds}

    ours = result(10.0, [10.0, 12.0, 30.0])
    peer = result(9.0, [9.0, 20.0, 24.0])  # one lucky round, otherwise slower
    c = train_report.compare(ours, peer)
    assert c["speed_step"] == 0.9 and c["speed_rounds"] == 20.0 / 12.0
    assert train_report.compare(ours, {**peer, "rounds": []})["speed_rounds"] is None


# --nanogpt PATH: a stand-in model.py with nanoGPT's interface, written here -----------------
STAND_IN = """
from dataclasses import dataclass

import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    block_size: int = 8
    vocab_size: int = 11
    n_layer: int = 1
    n_head: int = 1
    n_embd: int = 4
    dropout: float = 0.1
    bias: bool = False


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.dropout == 0.0 and config.bias, config  # the peers' settings
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.mix = nn.Linear(config.n_embd, config.n_embd)
        print("stand-in built")

    def forward(self, idx, targets=None):
        x = self.mix(self.wte(idx) + self.wpe.weight[: idx.shape[1]])
        logits = x @ self.wte.weight.T
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)
        return logits, loss
"""


def test_nanogpt_runs_in_one_process_beside_glassformer_and_hf(tmp_path, monkeypatch, capsys):
    from benchmarks import nanogpt

    (tmp_path / "model.py").write_text(STAND_IN)
    shape = bench_train.SHAPES["tiny"].replace(n_layer=1, batch=2)
    monkeypatch.setitem(bench_train.SHAPES, "tiny", shape)
    # its own loss: the next token of each position, the last position left out
    model, loss_of = nanogpt.build_nanogpt(shape, tmp_path)
    ids = torch.randint(0, shape.vocab, (2, shape.context))
    logits = model(ids, torch.zeros_like(ids))[0]
    expected = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
    torch.testing.assert_close(loss_of(model, ids), expected)

    out = tmp_path / "train_nanogpt.json"
    argv = ["--quick", "--threads", "1", "--nanogpt", str(tmp_path), "--paired-rounds", "1"]
    bench_train.main([*argv, "--paired-seconds", "0", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["nanogpt"]["model_py"] == str(tmp_path / "model.py") and data["reuse_memory"]
    (tiny,) = data["shapes"].values()
    c, v, t = shape.d_model, shape.vocab, shape.context
    assert tiny["n_params"]["nanogpt"] == v * c + t * c + c * c + c  # the stand-in's weights
    assert tiny["n_params"]["glassformer"] == tiny["n_params"]["hf"] > tiny["n_params"]["nanogpt"]
    assert positive(tiny["peak_rss_mb"])
    run = tiny["paired"]  # one round: one block of each model and of the matmul
    assert set(run["blocks"]) == {"glassformer", "nanogpt", "hf", "matmul"}
    assert all(len(b["step"]) == 1 and positive(b["step"][0]) for b in run["blocks"].values())
    fig = run["figures"]
    for peer in ("nanogpt", "hf"):
        r = fig[peer]["speed"]
        assert r["min"] == r["median"] == r["max"] and positive(r["median"])
        assert r["median"] == fig[peer]["step_ms"] / fig["glassformer"]["step_ms"]
    printed = capsys.readouterr().out
    assert "stand-in built" not in printed  # its construction's prints are kept out
    assert "ONE PROCESS" in printed and "\nnanoGPT " in printed and "\nHF GPT2 (sdpa) " in printed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no model.py in that directory"),
        ("GPTConfig = object\n", "model.py has no GPT;"),
        ("raise RuntimeError('boom')\n", "model.py failed to import: RuntimeError: boom"),
    ],
)
def test_nanogpt_path_without_its_model_is_a_usage_error(tmp_path, capsys, content, message):
    checkout = tmp_path / "nanoGPT"
    checkout.mkdir()
    if content is not None:
        (checkout / "model.py").write_text(content)
    out = tmp_path / "out.json"
    for path in (checkout, tmp_path / "missing"):
        with pytest.raises(SystemExit) as exit_info:
            bench_train.main(["--nanogpt", str(path), "--out", str(out)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        expected = message if path == checkout else "not a directory"
        assert f"error: --nanogpt {path}: " in err and expected in err, err
        assert "Traceback" not in err and not out.exists()


@pytest.mark.slow
def test_data_smoke_token_files_hold_two_bytes_a_token(tmp_path):
    from benchmarks import bench_data

    out = tmp_path / "data.json"
    argv = ["--sizes", "200KB", "--peers", "glassformer-char", "--tmp", str(tmp_path)]
    bench_data.main([*argv, "--out", str(out)])
    data = json.loads(out.read_text())
    assert {"environment", "argv", "settings", "peers", "rows"} <= set(data)
    assert data["environment"]["cpu"] and data["settings"]["sizes"] == ["200KB"]
    (row,) = data["rows"]
    assert (row["size"], row["bytes"], row["peer"]) == ("200KB", 200_000, "glassformer-char")
    for run in ("first", "second"):
        r = row[run]
        assert positive(r["ready_s"]) and r["ready_s"] == r["first_step_s"] <= r["wall_s"]
        assert positive(r["peak_rss_mb"]) and positive(r["max_process_rss_mb"])
    # an ASCII corpus, one char token a character: the training part (90%) and the held-out
    # part (10%), each framed by <BOS> ... <EOS>, in uint16 token files
    assert all(name.endswith(".uint16") for name in row["cache_files"])
    assert row["cache_bytes"] == 2 * (200_000 + 4)
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]  # corpus and caches deleted


def test_data_corpus_is_the_same_text_for_the_same_seed(tmp_path):
    from benchmarks.data_corpus import write_corpus

    a = write_corpus(tmp_path / "a.txt", 20_000).read_bytes()
    b = write_corpus(tmp_path / "b.txt", 20_000).read_bytes()
    c = write_corpus(tmp_path / "c.txt", 20_000, seed=1).read_bytes()
    assert len(a) == 20_000 and a.endswith(b"\n") and a.isascii()
    assert a == b and a != c
    words = a.split()
    assert len(set(words)) < len(words) / 2  # Zipf: frequent words repeat


def test_nanogpt_prepare_encodes_as_the_tokenizer_json(tmp_path):
    from benchmarks.data_corpus import hf_folder, write_corpus
    from benchmarks.nanogpt_prepare import edited, tiktoken_encoding
    from tokenizers import Tokenizer

    corpus = write_corpus(tmp_path / "c.txt", 100_000)
    folder = hf_folder(corpus, tmp_path / "hf", vocab_size=600)
    enc = tiktoken_encoding(folder / "tokenizer.json")
    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    text = corpus.read_text() + " Ünïcödé 123, don't\n\n"
    assert enc.encode_ordinary(text) == hf.encode(text).ids
    assert enc.eot_token == hf.token_to_id("<|endoftext|>")
    source = "num_proc = 8\nx = 1\n    total_batches = 1024\n"
    assert edited(source, 2) == "num_proc = 2\nx = 1\n    total_batches = min(1024, len(dset))\n"
    with pytest.raises(ValueError, match="expected the line 'num_proc = 8' once"):
        edited("num_proc = 4\n", 2)


def test_tokenizers_alone_writes_the_ids_the_library_gives_the_whole_text(tmp_path, capsys):
    import numpy as np
    from benchmarks import data_tokenizers_alone as alone
    from benchmarks.data_corpus import write_corpus
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    corpus = write_corpus(tmp_path / "c.txt", 30_000)
    with open(corpus, "a", encoding="utf-8", newline="") as f:
        f.write(" Ünïcödé 123,  don't\r\n\n")  # two spaces; a CR kept
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train([str(corpus)], trainers.BpeTrainer(
        vocab_size=400, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    ))  # fmt: skip
    tok.save(str(tmp_path / "tokenizer.json"))
    with open(corpus, encoding="utf-8", newline="") as f:
        whole = tok.encode(f.read(), add_special_tokens=False).ids
    # pieces of about 1,000 characters, 4,000 read at a time: 30 batches of a few pieces
    out = tmp_path / "tokens.uint16"
    n = alone.encode(corpus, tmp_path / "tokenizer.json", out, piece=1_000, block=4_000)
    assert n == len(whole) and np.fromfile(out, dtype=np.uint16).tolist() == whole
    alone.main([str(corpus), str(tmp_path / "tokenizer.json"), str(out)])  # one piece
    assert capsys.readouterr().out == f"tokens {len(whole)}\n"
    assert np.fromfile(out, dtype=np.uint16).tolist() == whole  # written afresh, not appended
    assert alone.pieces("ab cd ef gh", 5) == (["ab", " cd", " ef"], " gh")
    assert alone.pieces("abcdefgh", 3) == (["abc", "def"], "gh")  # no space: cut at the size


def data_row(size, n, peer, ready, second=True, **extra):
    """A made-up row of the data benchmark's results."""
    from benchmarks.data_peers import LABELS

    run = {"wall_s": ready, "first_step_s": ready, "peak_rss_mb": 512.0,
           "max_process_rss_mb": 512.0, "ready_s": ready}  # fmt: skip
    return {"size": size, "bytes": n, "peer": peer, "label": LABELS[peer], "first": run,
            "second": run if second else None, "cache_bytes": 2 * n, "tokens": n,
            "bytes_per_token": 2.0, **extra}  # fmt: skip


def earlier_data(tmp_path, **settings) -> Path:
    """An earlier run's results: 10MB and 1GB, char, tokenizer.json and the floor."""
    from benchmarks.bench_data import GOALS, HF_VOCAB
    from benchmarks.data_peers import BPE_VOCAB, MODEL

    old = {"date": "2026-10-01T00:00:00+00:00", "cpu": "An older CPU"}
    rows = [data_row(s, n, p, 9.0, second=p != "tokenizers-alone")
            for s, n in (("10MB", 10**7), ("1GB", 10**9))
            for p in ("glassformer-char", "glassformer-hf", "tokenizers-alone")]  # fmt: skip
    rows[0]["carried"] = old  # carried once already: keeps its first mark
    data = {"benchmark": "data", "environment": {"date": "2026-11-28T18:41:22+00:00",
            "cpu": "The earlier CPU"}, "argv": [],
            "settings": {"sizes": ["10MB", "1GB"], "rounds": 1, "model": MODEL,
                         "hf_vocab": HF_VOCAB, "bpe_vocab": BPE_VOCAB, "goals": GOALS} | settings,
            "peers": {}, "rows": rows}  # fmt: skip
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_data_keep_carries_the_rows_of_the_cases_not_measured(tmp_path, monkeypatch, capsys):
    from benchmarks import bench_data

    def fake_case(peer, corpus, folder, shared):  # the figures of a measured case, made up
        made_up = data_row("-", 0, peer, 1.0)
        return {k: v for k, v in made_up.items() if k not in ("size", "bytes", "peer", "label")}

    monkeypatch.setattr(bench_data, "run_case", fake_case)
    out = tmp_path / "data.json"
    argv = ["--sizes", "1KB,1GB", "--peers", "glassformer-hf", "--tmp", str(tmp_path / "tmp"),
            "--keep", str(earlier_data(tmp_path))]  # fmt: skip
    monkeypatch.setattr(bench_data, "write_corpus", lambda path, n: path.write_text("a") and path)
    monkeypatch.setattr(bench_data, "hf_folder", lambda *a: None)
    data = bench_data.main([*argv, "--out", str(out)])
    assert json.loads(out.read_text()) == data
    assert data["settings"]["sizes"] == ["1KB", "10MB", "1GB"]  # ordered by bytes
    cases = [(r["size"], r["peer"], r.get("carried", {}).get("cpu")) for r in data["rows"]]
    assert cases == [
        ("1KB", "glassformer-hf", None),
        ("10MB", "glassformer-char", "An older CPU"),
        ("10MB", "glassformer-hf", "The earlier CPU"),
        ("10MB", "tokenizers-alone", "The earlier CPU"),
        ("1GB", "glassformer-char", "The earlier CPU"),
        ("1GB", "glassformer-hf", None),  # measured again: the new row, not the earlier one
        ("1GB", "tokenizers-alone", "The earlier CPU"),
    ]
    assert data["rows"][2]["carried"] == {"date": "2026-11-28T18:41:22+00:00",
                                          "cpu": "The earlier CPU"}  # fmt: skip
    assert data["rows"][5]["first"]["ready_s"] == 1.0 and data["rows"][4]["first"]["ready_s"] == 9
    assert list(data["peers"]) == ["glassformer-char", "glassformer-hf", "tokenizers-alone"]
    printed = capsys.readouterr().out
    (line,) = [x for x in printed.splitlines() if x.startswith("1GB ") and "alone" in x]
    assert " tokenizers library alone (earlier run, 2026-11-28) " in line
    assert line.split()[-6:] == ["9.0", "0.50", "-", "-", "2,000.0", "2.00"]  # no second run


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"hf_vocab": 4096}, "its hf_vocab is 4096, this run's 8192: rows are carried only from "
                             "a run with the same hf_vocab"),
        ({"bpe_vocab": 256}, "its bpe_vocab is 256, this run's 512"),
        ({"model": {"n_layer": 2}}, "its model is {'n_layer': 2}, this run's {'n_layer': 1,"),
        (None, "not results of the data benchmark"),
    ],
)  # fmt: skip
def test_data_keep_refuses_a_run_of_other_settings(tmp_path, capsys, settings, message):
    from benchmarks import bench_data

    path = earlier_data(tmp_path, **(settings or {}))
    if settings is None:
        path.write_text(json.dumps({"benchmark": "train"}), encoding="utf-8")
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exit_info:
        bench_data.main(["--sizes", "1KB", "--keep", str(path), "--out", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: --keep: {path}: {message}" in err and "Traceback" not in err, err
    assert not out.exists()
