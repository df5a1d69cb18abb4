"""docs/scripts/benchmark_pages.py: the Benchmarks page's tables and charts come from the
benchmarks' JSON (tests/docs/data/benchmarks: short ``--quick`` runs), carry its figures, and
say which benchmarks have no results instead of inventing any."""

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data" / "benchmarks"
SCRIPT = ROOT / "docs" / "scripts" / "benchmark_pages.py"
spec = importlib.util.spec_from_file_location("benchmark_pages", SCRIPT)
pages = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pages)


def load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    assert pages.main(["--results", str(DATA), "--out", str(out)]) == []
    return out


def test_every_benchmark_gets_a_table_and_a_bar_chart(out):
    assert sorted(p.stem for p in DATA.glob("*.json")) == sorted(pages.BENCHMARKS)
    for name in pages.BENCHMARKS:
        text = (out / f"{name}.md").read_text(encoding="utf-8")
        env = load(name)["environment"]
        assert text.startswith("**Machine:** ") and "**Command:** `python -m benchmarks." in text
        assert f"{env['cpus']} CPUs" in text and f"Python {env['python']}" in text
        assert "\n| --- |" in text
        assert f"](benchmarks/generated/{name}.png)" in text
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        chart = f"\n\n![{name}: bar chart of the ratios in the table]"
        tables = (out / f"{name}-tables.md").read_text(encoding="utf-8")  # for other pages
        assert text.split(chart)[0] + "\n" == tables
    assert (out / "missing.md").read_text() == "Every benchmark has results in this build.\n"


def cells(out: Path, name: str) -> list[list[str]]:
    """The cells of every table row of ``<name>.md``."""
    text = (out / f"{name}.md").read_text(encoding="utf-8")
    lines = re.findall(r"^\|.*", text, re.M)
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def row_with(out: Path, name: str, *words: str) -> list[str]:
    (row,) = [r for r in cells(out, name) if all(w in r for w in words)]
    return row


def test_the_tables_carry_the_ratios_of_the_json(out):
    tok = load("tokenizers")
    t = tok["train"]
    row = row_with(out, "tokenizers", f"HF tokenizers ({t['hf_merges']:,} merges)")
    assert row[-1] == f"{t['hf_seconds'] / t['glassformer_seconds']:.2f}x"  # peer / glassformer
    one = tok["encode_one_string"]
    ratio = one["glassformer (cold cache)"]["mb_per_s"] / one["tiktoken"]["mb_per_s"]
    assert row_with(out, "tokenizers", "tiktoken", f"{one['tiktoken']['mb_per_s']:.2f}")[-1] == (
        f"{ratio:.2f}x"
    )

    tiny = load("train")["shapes"]["tiny"]
    ms = {p: r["timing"]["step"]["median_ms"] for p, r in tiny["results"].items()}
    row = row_with(out, "train", "HF GPT2 (sdpa)", f"{ms['hf']:,.0f}")
    assert row[7] == f"{ms['hf'] / ms['glassformer']:.2f}x"  # speed = peer ms / glassformer ms
    r = tiny["paired"]["figures"]["torch.nn"]["speed"]
    assert f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})" in row_with(
        out, "train", "torch.nn layers", f"{tiny['paired']['figures']['torch.nn']['step_ms']:,.0f}"
    )

    enc = load("encoder")["shapes"]["tiny"]["results"]
    hf, ours = enc["hf"]["dense"], enc["glassformer"]["dense"]
    speed = hf["timing"]["forward"]["median_ms"] / ours["timing"]["forward"]["median_ms"]
    assert row_with(out, "encoder", "HF BertModel", f"{hf['tokens_per_s']:,.0f}")[-2] == (
        f"{speed:.2f}x"
    )

    for r in load("generation")["rows"]:
        row = row_with(out, "generation", r["model"], str(r["batch"]))
        assert row[5] == f"{r['glassformer_cached_tok_s'] / r['hf_cached_tok_s']:.2f}x"

    vs_plain = load("hooks")["figures"]["all"]["vs_plain"]
    assert row_with(out, "hooks", "all")[-1].startswith(f"{vs_plain['median']:.2f}x")

    case = load("fast_paths")["cases"]["inplace/tiny/decoder"]
    row = row_with(out, "fast_paths", "inplace", "decoder")
    assert row[5].startswith(f"{case['speedup']['median']:.2f}x") and row[7] == case["verdict"]

    first = load("graph_attention")["levels"]["layer"]["window"]["rows"][0]
    row = row_with(out, "graph_attention", "layer", "`window:128`", f"{first['t']:,}")
    assert row[6] == f"{first['dense']['ms'] / first['sparse']['ms']:.2f}x"  # dense / sparse
    assert row[9] == f"{first['dense']['mb'] / first['sparse']['mb']:.2f}x"

    first = load("recurrence")["rows"][0]
    row = row_with(out, "recurrence", "LSTM", f"{first['t']:,}")
    r, t = first["cases"]["lstm"]["vs_attention"], first["t"]
    assert row[-1] == f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})"  # LSTM / attention
    assert row[4:6] == [f"{t:,}", f"{t - 1:,}"]  # sequential steps, max path length
    assert row_with(out, "recurrence", "attention", f"{t:,}")[4:6] == ["1", "1"]

    for grid, f in load("patching")["figures"].items():
        row = row_with(out, "patching", grid)
        r = f["speed"]  # TransformerLens's grid time / glassformer's
        assert row[3] == f"{f['runs']:,}"
        assert row[-1] == f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})"

    nano = load("train_nanogpt")["shapes"]["tiny"]["paired"]["figures"]["hf"]["speed"]
    assert row_with(out, "train_nanogpt", "HF GPT2 (sdpa)")[-1].startswith(f"{nano['median']:.2f}x")


def test_a_missing_benchmark_is_listed_and_nothing_is_invented(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    results.mkdir()
    shutil.copy(DATA / "hooks.json", results)
    out.mkdir()
    (out / "train.png").write_bytes(b"stale")  # from an earlier build
    missing = pages.main(["--results", str(results), "--out", str(out)])
    assert missing == [n for n in pages.BENCHMARKS if n != "hooks"]
    listing = (out / "missing.md").read_text()
    assert all(f"- `{n}`: not in this build's results" in listing for n in missing)
    assert "hooks" not in listing and (out / "hooks.png").exists()
    train = (out / "train.md").read_text()
    assert "not in this build's results" in train and not re.search(r"\d\.\d", train)
    assert not (out / "train.png").exists()


def test_same_json_same_pages_and_a_recorded_command_is_shown(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    hooks = load("hooks") | {"argv": ["--quick", "--threads", "1"]}
    (results / "hooks.json").write_text(json.dumps(hooks))
    ga = load("graph_attention")  # dense out of memory: no ratio, no bar, nothing made up
    ga["levels"]["layer"]["window"]["rows"][0] |= {"dense": {"oom": "failed"}}
    ga["levels"]["layer"]["window"]["rows"][0]["ratios"] = {"speed": None, "memory": None}
    (results / "graph_attention.json").write_text(json.dumps(ga))
    encoder = load("encoder")
    encoder["shapes"]["tiny"]["paired"] = {"error": "paired worker exited with status -9"}
    (results / "encoder.json").write_text(json.dumps(encoder))
    made = []
    for run in ("a", "b"):
        argv = ["--results", str(results), "--out", str(tmp_path / run)]
        pages.main([*argv, "--only", "hooks,graph_attention,encoder"])
        made.append({p.name: p.read_bytes() for p in sorted((tmp_path / run).iterdir())})
    assert made[0] == made[1]
    command = "**Command:** `python -m benchmarks.bench_hooks --quick --threads 1`"
    assert command in made[0]["hooks.md"].decode()
    failed = "The paired run of tiny failed: paired worker exited with status -9"
    assert failed in made[0]["encoder.md"].decode()
    row = row_with(tmp_path / "a", "graph_attention", "layer", "`window:128`", "1,024")
    assert row[5:7] == ["OOM", "-"] and row[9] == "-"


def test_the_page_includes_every_benchmark_and_the_missing_list():
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    included = re.findall(r'^--8<-- "docs/benchmarks/generated/(\w+)\.md"$', page, re.M)
    assert sorted(included) == sorted([*pages.BENCHMARKS, "missing"])


def test_the_readme_results_are_the_summary_of_the_committed_results():
    """README.md's results table is written by ``benchmark_pages.py --readme`` from
    docs/benchmarks/results, never typed in: it equals the summary of those files."""
    text = pages.README.read_text(encoding="utf-8")
    block = text.split(pages.BEGIN, 1)[1].split(pages.END, 1)[0]
    results = ROOT / "docs" / "benchmarks" / "results"
    assert block.strip() == pages.summary(results).strip(), (
        "README.md's results are stale: run python docs/scripts/benchmark_pages.py --readme"
    )


def test_the_summary_names_a_benchmark_measured_on_another_machine(tmp_path):
    same, one_other = tmp_path / "same", tmp_path / "other"  # the short runs' CPUs made one
    for folder in (same, one_other):
        folder.mkdir()
        for name in pages.SUMMARY:
            if (DATA / f"{name}.json").exists():
                data = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
                other = folder == one_other and name == "hooks"
                data["environment"]["cpu"] = "Another CPU" if other else "One CPU"
                (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    summary = pages.summary(one_other)
    assert summary.splitlines()[-1] == (
        "Measured on another machine: hook points: Another CPU (see each benchmark's page)."
    )
    assert "Measured on another" not in pages.summary(same)


def test_the_summary_carries_each_benchmarks_ratios(tmp_path):
    summary = pages.summary(DATA)
    rows = [line for line in summary.splitlines()[2:] if line.startswith("| ")]
    assert len(rows) == len(pages.BENCHMARKS)
    assert "\nMachine: " in summary
    t = load("tokenizers")["train"]
    assert f"train: HF tokenizers {t['hf_seconds'] / t['glassformer_seconds']:.2f}x" in summary
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{pages.BEGIN}\nold\n{pages.END}\n\nafter\n", encoding="utf-8")
    pages.write_readme(DATA, readme)
    assert readme.read_text(encoding="utf-8") == (
        f"# x\n\n{pages.BEGIN}\n{summary}{pages.END}\n\nafter\n"
    )


def test_the_data_table_carries_each_run_and_checks_the_goals(out, tmp_path):
    d = load("data")
    r = next(r for r in d["rows"] if r["peer"] == "glassformer-char")
    row = row_with(out, "data", r["label"])
    expected = []
    for run in (r["first"], r["second"]):
        expected += [f"{run['ready_s']:.1f}", f"{run['peak_rss_mb'] / 1024:.2f}"]
    assert row[2:6] == expected
    text = (out / "data.md").read_text(encoding="utf-8")
    assert "**Goals**:" in text and f"- {r['label']}: peak memory " in text
    results = tmp_path / "results"  # not measured yet: the README says so, with no figure
    results.mkdir()
    line = next(x for x in pages.summary(results).splitlines() if "data at real size" in x)
    assert "| to be measured | `python -m benchmarks.bench_data` |" in line


def test_the_data_page_shows_the_floor_and_rows_carried_from_an_earlier_run(tmp_path):
    d = load("data")
    (hf,) = [r for r in d["rows"] if r["peer"] == "glassformer-hf"]
    (ng,) = [r for r in d["rows"] if r["peer"] == "nanogpt"]
    ng["carried"] = {"date": "2026-11-28T18:41:22+00:00", "cpu": "An earlier CPU"}
    floor = hf["first"]["ready_s"] / 4  # glassformer's first run: 300% above the floor
    first = {"wall_s": floor, "first_step_s": None, "peak_rss_mb": 256.0,
             "max_process_rss_mb": 256.0, "ready_s": floor}  # fmt: skip
    d["rows"].append({"size": "1MB", "bytes": 10**6, "peer": "tokenizers-alone",
                      "label": "tokenizers library alone", "first": first, "second": None,
                      "cache_bytes": 500_000, "tokens": 250_000,
                      "bytes_per_token": 2.0})  # fmt: skip
    results, out = tmp_path / "results", tmp_path / "out"
    results.mkdir()
    out.mkdir()
    (results / "data.json").write_text(json.dumps(d), encoding="utf-8")
    pages.render("data", results, out)
    alone = row_with(out, "data", "tokenizers library alone")
    assert alone[2:] == [f"{floor:.1f}", "0.25", "-", "-", "0.5", "2.00"]  # no second run
    carried = "nanoGPT's way (earlier run, 2026-11-28, An earlier CPU)"
    assert row_with(out, "data", carried)[2] == f"{ng['first']['ready_s']:.1f}"
    text = (out / "data.md").read_text(encoding="utf-8")
    ours, theirs = hf["first"]["ready_s"], ng["first"]["ready_s"]
    assert (
        f"- glassformer, tokenizer.json: the tokenizers library alone encodes the corpus at 1MB "
        f"in {floor:.1f} s on these cores: glassformer's first run, {ours:.1f} s, is 300% above "
        "this floor; nanoGPT's prepare.py encodes with tiktoken, a faster encoder of the same "
        "tokenizer\n"
    ) in text
    assert (
        f"- glassformer, tokenizer.json: first run at 1MB {ours:.1f} s, nanoGPT's prepare + first "
        f"step {theirs:.1f} s: " in text
    )
    assert text.count(" (nanoGPT's way at 1MB: earlier run, 2026-11-28, An earlier CPU)\n") == 3
    assert (out / "data.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # a bar with no second run
    import benchmark_data

    _, chart = benchmark_data.tables(d)
    bars = dict(chart["rows"])
    assert bars["glassformer, tokenizer.json vs tokenizers alone, 1MB"] == {
        "first run": 0.25, "second run": "no second run"}  # fmt: skip
    assert "glassformer, char vs nanoGPT, 1MB (earlier run)" in bars
