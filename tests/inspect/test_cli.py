"""``glassformer inspect`` and ``glassformer trace`` on tiny saved checkpoints, run through a
parser that registers only these two subcommands (the CLI's own errors and exit statuses)."""

from __future__ import annotations

import contextlib
import io
import struct

import pytest
import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderMLM
from glassformer.cli import inspect_args
from glassformer.cli.errors import ArgumentParser, guarded
from glassformer.inspect import plots
from glassformer.tokenizers import get_tokenizer


def run_cli(*argv) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``glassformer argv...`` with inspect and trace."""
    parser = ArgumentParser(prog="glassformer")
    inspect_args.add_parser(parser.add_subparsers(dest="command", parser_class=ArgumentParser))

    def command() -> int:
        args = parser.parse_args([str(a) for a in argv])
        return args.handler.load()(args)

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = guarded(command)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, kit) -> dict[str, object]:
    tok = get_tokenizer("char").train("the cat sat on the mat, a dog ran")
    root = tmp_path_factory.mktemp("checkpoints")
    found = {}
    for name, cls, preset, extra in (
        ("lm", DecoderLM, "tiny", {}),
        ("seq2seq", EncoderDecoder, "tiny-seq2seq", {}),
        ("mlm", EncoderMLM, "bert-base", {"type_vocab_size": 0, "pooler": False}),
    ):
        options = dict(double=False, vocab_size=tok.vocab_size, max_len=24, **extra)
        model = kit.build(cls, preset, **options)
        found[name] = model.save_pretrained(root / name, tokenizer=tok)
    found["vocab"] = tok.vocab_size
    return found


def _png(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_inspect_writes_the_pictures_and_an_index(checkpoints, tmp_path):
    out = tmp_path / "pictures"
    code, stdout, err = run_cli(
        "inspect", "--checkpoint", checkpoints["lm"], "--text", "the cat", "--out", out,
        "--pad-to", "12", "--heads", "1", "--layers", "0", "1",
    )  # fmt: skip
    assert code == 0, err
    assert "wrote 9 pictures" in stdout
    names = {
        "self_attention_decoder.png", "self_attention_decoder_layer0_head1.png",
        "self_attention_decoder_layer1_head1.png", "masks.png", "residual_decoder.png",
        "positional.png", "graph_decoder.png", "attention_graph_decoder.png",
        "receptive_field_decoder.png", "index.md",
    }  # fmt: skip
    assert {p.name for p in out.iterdir()} == names
    for name in names - {"index.md"}:
        width, height = _png(out / name)
        assert width > 100 and height > 100
    index = (out / "index.md").read_text()
    assert index.startswith("# Inside a DecoderLM\n")
    for name in names - {"index.md"}:
        assert f"[{name}]({name})" in index
    pads = ", '<PAD>'" * 4
    assert f"decoder tokens: ['<BOS>', 't', 'h', 'e', ' ', 'c', 'a', 't'{pads}]" in index


def _index_rows(out) -> dict[str, str]:
    """{file: what it shows} from index.md's table."""
    rows = [line for line in (out / "index.md").read_text().splitlines() if line.startswith("| [")]
    return {r.split("](")[0][3:]: r.split(") | ", 1)[1].removesuffix(" |") for r in rows}


@pytest.mark.parametrize(
    ("kind", "argv", "shown"),
    [
        ("lm", ["--pad-to", "12"], {
            "graph_decoder.png": "decoder self-attention graph of each layer (causal): j → i",
            "attention_graph_decoder.png":
                "decoder learned self-attention as a graph (mean over heads), A_ij > 0.1",
            "receptive_field_decoder.png":  # the last real token, not the padding
                "decoder: the inputs position 7 can depend on after each layer",
        }),
        ("mlm", ["--threshold", "0.25", "--heads", "0", "2", "--position", "2"], {
            "graph_encoder.png": "encoder self-attention graph of each layer (full): j → i",
            "attention_graph_encoder.png":
                "encoder learned self-attention as a graph (mean of heads 0, 2), A_ij > 0.25",
            "receptive_field_encoder.png":
                "encoder: the inputs position 2 can depend on after each layer",
        }),
        ("seq2seq", ["--cross", "--target", "the mat"], {
            "graph_encoder.png": "encoder self-attention graph of each layer (full): j → i",
            "graph_decoder.png": "decoder self-attention graph of each layer (causal): j → i",
            "graph_cross.png": "cross-attention graph of each layer (full): source j → target i",
            "attention_graph_cross.png":
                "learned cross-attention as a graph (mean over heads), A_ij > 0.1",
            "receptive_field_encoder.png":
                "encoder: the inputs position 7 can depend on after each layer",
            "receptive_field_decoder.png":
                "decoder: the inputs position 7 can depend on after each layer",
        }),
    ],
)  # fmt: skip
def test_inspect_draws_the_gnn_view_of_each_family(checkpoints, tmp_path, kind, argv, shown):
    out = tmp_path / kind
    code, _, err = run_cli(
        "inspect", "--checkpoint", checkpoints[kind], "--text", "the cat", "--out", out, *argv
    )
    assert code == 0, err
    rows = _index_rows(out)
    for name, what in shown.items():
        assert rows[name] == what
        width, height = _png(out / name)
        assert width > 100 and height > 100
    assert {p.name for p in out.iterdir()} == {*rows, "index.md"}


def test_repeated_layers_and_heads_are_drawn_once(checkpoints, tmp_path, monkeypatch):
    drawn = []
    for name in ("plot_attention", "plot_head"):
        real = getattr(plots, name)

        def spy(rec, path, real=real, **kw):
            drawn.append((path.name, kw.get("layers"), kw.get("heads")))
            return real(rec, path, **kw)

        monkeypatch.setattr(plots, name, spy)
    argv = ["--heads", *["1"] * 1000, "--layers", "0", "0"]
    code, _, err = run_cli(
        "inspect", "--checkpoint", checkpoints["lm"], "--text", "the", "--out", tmp_path, *argv
    )
    assert code == 0, err
    assert drawn == [
        ("self_attention_decoder.png", [0], [1]),
        ("self_attention_decoder_layer0_head1.png", None, None),
    ]


def test_inspect_cross_attention_of_a_seq2seq_model(checkpoints, tmp_path):
    out = tmp_path / "s2s"
    code, _, err = run_cli(
        "inspect", "--checkpoint", checkpoints["seq2seq"], "--text", "a cat", "--out", out,
        "--target", "the mat", "--cross", "--layers", "1",
    )  # fmt: skip
    assert code == 0, err
    assert (out / "cross_attention.png").is_file()
    assert (out / "cross_attention_layer1_head0.png").is_file()
    index = (out / "index.md").read_text()
    assert index.startswith("# Inside an EncoderDecoder\n")
    assert "decoder tokens: ['<BOS>', 't', 'h', 'e', ' ', 'm', 'a', 't']" in index
    assert "encoder tokens: ['a', ' ', 'c', 'a', 't', '<EOS>']" in index


def test_trace_prints_each_step_of_one_block(checkpoints):
    code, out, err = run_cli(
        "trace", "--checkpoint", checkpoints["lm"], "--text", "the cat", "--layer", "1"
    )
    assert code == 0, err
    assert "decoder input (8 tokens): ['<BOS>', 't', 'h', 'e', ' ', 'c', 'a', 't']" in out
    assert ". blocks.1.attn · scores\n     a_nm = q_nᵀ k_m / √d_k  (Eq. 2)" in out
    assert "A (1, 4, 8, 8)" in out and "blocks.0" not in out
    assert f"logits (1, 8, {checkpoints['vocab']})" in out
    assert all(f"     A[0, {h}, -1] = [" in out for h in range(4))  # the last token's row


def test_trace_prints_the_values_and_the_prediction_of_the_model(checkpoints):
    from glassformer import load_model

    model = load_model(checkpoints["lm"])
    tok = model.tokenizer
    with torch.no_grad():
        logits = model(torch.tensor([tok.encode("the cat", add_bos=True)])).logits[0, -1]
    code, out, err = run_cli("trace", "--checkpoint", checkpoints["lm"], "--text", "the cat")
    assert code == 0, err
    *_, shown, blank, prediction = out.splitlines()
    assert shown.startswith("     logits[0, -1, :4] = [") and blank == ""
    values = [float(v) for v in shown.split("= [")[1].rstrip("]").split(", ")]
    torch.testing.assert_close(torch.tensor(values), logits[:4], rtol=1e-3, atol=1e-6)
    head, _, top = prediction.partition(") = ")
    assert head == "next token after the input: p = softmax(logits[0, -1]"
    p = logits.double().softmax(-1)
    best = p.topk(3)
    pairs = [part.rsplit(" ", 1) for part in top.split(", ")]
    assert [name for name, _ in pairs] == [repr(tok.id_to_token(i)) for i in best.indices.tolist()]
    probabilities = torch.tensor([float(v) for _, v in pairs], dtype=torch.double)
    torch.testing.assert_close(probabilities, best.values, rtol=0, atol=1e-4)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["inspect", "--cross"], ["--cross needs an encoder-decoder", "DecoderLM"]),
        (["inspect", "--layers", "2"], ["--layers 2 is out of range: allowed 0..1"]),
        (["inspect", "--heads", "4"], ["--heads 4 is out of range: allowed 0..3"]),
        (["inspect", "--pad-to", "3"], ["--pad-to 3 is not allowed", "8 tokens", "24"]),
        (["inspect", "--position", "8"], ["--position 8 is out of range", "decoder's 8", "0..7"]),
        (["inspect", "--threshold", "1"], ["--threshold: 1 is not allowed: a weight in [0, 1)"]),
        (["inspect", "--threshold", "x"], ["--threshold: 'x' is not a number"]),
        (["inspect", "--target", "x"], ["--target is for encoder-decoder"]),
        (["trace", "--layer", "5"], ["--layer 5 is out of range: allowed 0..1"]),
        (["trace", "--text", "the cat " * 4], ["--text has 33 tokens", "max_len is 24"]),
    ],
)
def test_user_errors_are_one_line_and_exit_2(checkpoints, tmp_path, argv, words):
    out = tmp_path / "never"
    extra = ["--out", out] if argv[0] == "inspect" else []
    text = [] if "--text" in argv else ["--text", "the cat"]
    code, _, err = run_cli(*argv, "--checkpoint", checkpoints["lm"], *text, *extra)
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("glassformer: error: ")
    for word in words:
        assert word in lines[0]
    assert not out.exists()  # nothing half-written


def test_trace_of_a_seq2seq_model_decodes_its_greedy_output(checkpoints):
    from glassformer import load_model
    from glassformer.generation import generate

    model = load_model(checkpoints["seq2seq"])
    src = model.tokenizer.encode("a cat", add_eos=True)
    from glassformer.inspect.inputs import MAX_TARGET

    n = min(MAX_TARGET, model.config.max_len - 1)
    new = generate(model, [src], max_new_tokens=n, temperature=0).tokens[0]
    new = new[:-1] if new[-1] == model.tokenizer.eos_id else new  # its row would predict nothing
    code, out, err = run_cli("trace", "--checkpoint", checkpoints["seq2seq"], "--text", "a cat")
    assert code == 0, err
    shown = [model.tokenizer.id_to_token(i) for i in [1, *new]]  # <BOS>, then the output
    assert f"decoder input ({len(shown)} tokens): {shown}" in out
    assert "decoder.blocks.1.cross_attn · softmax" in out
