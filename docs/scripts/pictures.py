"""Draw the pictures of the Concepts pages (docs/concepts/*.md) with glassformer.inspect.

    python docs/scripts/pictures.py                       # all, into docs/images/concepts/
    python docs/scripts/pictures.py --out /tmp/pics --only attention graphs --steps 5

Every picture comes from a small seeded model: random weights, or a two-layer decoder trained
here for ``--steps`` AdamW steps (default 80: about 16 s on one thread of a busy 2-core CPU) on
the period-2 language ``abab...``: each new letter is the one two places back, so its heads
learn to look back. Each function of ``PICTURES`` draws the pictures of one page and returns
the files it wrote.
"""

from __future__ import annotations

import argparse
import functools
import string
import tempfile
from pathlib import Path

import torch

from glassformer import DecoderLM, EncoderDecoder, EncoderModel, ModelConfig
from glassformer.circuits import circuit_cache, logit_attribution, ov_matrix
from glassformer.graphs import global_tokens, sliding_window
from glassformer.inspect import (
    attention_graphs,
    capture,
    plot_attention,
    plot_attention_graph,
    plot_graph,
    plot_head,
    plot_head_attribution,
    plot_masks,
    plot_positional,
    plot_receptive_field,
    plot_residual,
    plot_singular_values,
)
from glassformer.nn import Encoder
from glassformer.tokenizers import BPETokenizer, CharTokenizer

OUT = Path(__file__).resolve().parents[1] / "images" / "concepts"
STEPS = 80  # AdamW steps of the period-2 decoder
LETTERS = string.ascii_lowercase[:20]  # its alphabet: ids 5..24 of a CharTokenizer
CHARS = CharTokenizer().train(LETTERS)


def period_text(seed: int, length: int = 16) -> str:
    """a b a b ...: two random letters, repeated to ``length`` (rounded down to even)."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randperm(len(LETTERS), generator=g)[:2].tolist()
    return (LETTERS[a] + LETTERS[b]) * (length // 2)


def period_ids(seeds, length: int = 16) -> torch.Tensor:
    """(B, 1 + 2 ⌊length/2⌋): <BOS> and a period-2 text per seed."""
    return torch.tensor([CHARS.encode(period_text(s, length), add_bos=True) for s in seeds])


def labels(ids) -> list[str]:
    return [CHARS.id_to_token(int(i)) for i in ids]


@functools.cache
def period_decoder(steps: int = STEPS) -> DecoderLM:
    """A 2-layer, 4-head decoder trained ``steps`` steps on period-2 texts (eval mode)."""
    torch.manual_seed(0)
    config = ModelConfig(
        vocab_size=CHARS.vocab_size, d_model=32, n_layer=2, n_head=4, d_ff=64, max_len=32
    )
    model = DecoderLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(steps):
        ids = period_ids(range(1000 + 32 * step, 1000 + 32 * (step + 1)))
        loss = model(ids, labels=ids).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def attention(out: Path, steps: int) -> list[Path]:
    """One head of the trained decoder on a padded input, and the masks it applied."""
    model = period_decoder(steps)
    ids = torch.cat([period_ids([0], 8), torch.zeros(1, 2, dtype=torch.long)], 1)  # 2 <PAD>
    with capture(model) as rec:
        model(ids, attention_mask=(ids != 0).long())
    head = plot_head(rec, out / "attention-head.png", layer=0, head=0, tokens=labels(ids[0]))
    masks = plot_masks(rec, out / "attention-masks.png", tokens=labels(ids[0]))
    return [head.path, masks.path]


def multi_head(out: Path, steps: int) -> list[Path]:
    """Every head of every layer of the trained decoder."""
    model = period_decoder(steps)
    ids = period_ids([1], 10)
    with capture(model) as rec:
        model(ids)
    return [plot_attention(rec, out / "multi-head.png", tokens=labels(ids[0])).path]


def norms_residuals(out: Path, steps: int) -> list[Path]:
    """The residual stream of the trained (pre-norm) decoder, sub-layer by sub-layer."""
    model = period_decoder(steps)
    ids = period_ids([2], 10)
    with capture(model) as rec:
        model(ids)
    return [plot_residual(rec, out / "norms-residuals.png", tokens=labels(ids[0])).path]


def positional(out: Path, steps: int) -> list[Path]:
    """The sinusoidal table R and R Rᵀ (64 positions, C = 64); the position probes of
    glassformer.examples.positions, trained for 5/2 × ``steps`` steps (200 by default)."""
    from glassformer.examples.positions import pictures as position_probes

    config = ModelConfig(
        vocab_size=8, d_model=64, n_layer=1, n_head=2, max_len=64, positional="sinusoidal"
    )
    model = DecoderLM(config)
    table = plot_positional(model, out / "positional.png", figsize=(10, 4)).path
    return [table, *position_probes(out, steps=steps * 5 // 2)]


def families(out: Path, steps: int) -> list[Path]:
    """The three masks of an encoder-decoder: padded source, padded target."""
    torch.manual_seed(0)
    config = ModelConfig(
        family="encoder-decoder",
        vocab_size=CHARS.vocab_size,
        d_model=16,
        n_layer=1,
        n_head=2,
        max_len=16,
    )
    model = EncoderDecoder(config).eval()
    src = torch.tensor([[*CHARS.encode("abcde", add_eos=True), 0, 0]])
    tgt = torch.tensor([[*CHARS.encode("edcba", add_bos=True), 0]])
    with capture(model) as rec:
        model(src, (src != 0).long(), tgt, (tgt != 0).long())
    tokens = {"encoder": labels(src[0]), "decoder": labels(tgt[0])}
    return [plot_masks(rec, out / "families.png", tokens=tokens).path]


def tokenization(out: Path, steps: int) -> list[Path]:
    """The notes' sentence as BPE tokens, framed by <BOS> <EOS> and padded to ℓ_max = 14."""
    corpus = ["the cat is in the city; the city is the best", "León, in Spain, is a city"]
    bpe = BPETokenizer().train(corpus * 5, vocab_size=285)
    ids = bpe.encode("León is the best city in Spain.", add_bos=True, add_eos=True)
    ids = torch.tensor([ids + [bpe.pad_id] * (14 - len(ids))])
    torch.manual_seed(0)
    config = ModelConfig(
        family="encoder", vocab_size=bpe.vocab_size, d_model=16, n_layer=1, n_head=2, max_len=16
    )
    model = EncoderModel(config).eval()
    with capture(model) as rec:
        model(ids, (ids != bpe.pad_id).long())
    tokens = [bpe.decode([int(i)]) for i in ids[0]]
    return [plot_masks(rec, out / "tokenization.png", tokens=tokens).path]


def training(out: Path, steps: int) -> list[Path]:
    """Head 0 of layer 0 before training and after ``steps`` steps."""
    ids = period_ids([3], 8)
    paths = []
    for name, n in (("training-before.png", 0), ("training-after.png", steps)):
        model = period_decoder(n)
        with capture(model) as rec:
            model(ids)
        paths.append(plot_head(rec, out / name, tokens=labels(ids[0])).path)
    return paths


def generation(out: Path, steps: int) -> list[Path]:
    """Greedy generation with the KV cache: the rows of every step put together."""
    from glassformer.generation import generate

    model = period_decoder(steps)
    prompt = period_ids([4], 4)
    with capture(model) as rec:
        result = generate(model, prompt, max_new_tokens=8, temperature=0)
    ids = prompt[0].tolist() + result.tokens[0]
    path = plot_attention(
        rec, out / "generation.png", call=None, layers=[0], heads=[0, 1], tokens=labels(ids[:-1])
    )
    return [path.path]


def graphs(out: Path, steps: int) -> list[Path]:
    """A stack with a window in layers 0-1 and window + a global token in layer 2; the
    receptive field of its last position; the trained decoder's layer 0 as a weighted graph."""
    window = sliding_window(2, causal=True)
    stack = Encoder(3, 16, 2, 32, graphs=[window, window, window | global_tokens([0])])
    layers = attention_graphs(stack)
    tokens = list("graphs!!")
    paths = [plot_graph(layers, out / "graphs-layers.png", t=8, tokens=tokens).path]
    paths.append(
        plot_receptive_field(layers, out / "graphs-receptive.png", t=8, tokens=tokens).path
    )
    model = period_decoder(steps)
    ids = period_ids([5], 8)
    with capture(model) as rec:
        model(ids)
    learned = plot_attention_graph(
        rec, out / "graphs-learned.png", layers=[0], threshold=0.2, tokens=labels(ids[0])
    )
    return [*paths, learned.path]


def circuits(out: Path, steps: int) -> list[Path]:
    """Each head's direct share of the predicted logit; the singular values of each OV."""
    model = period_decoder(steps)
    ids = period_ids([6], 8)
    result, cache = circuit_cache(model, ids)
    answer = int(result.logits[0, -1].argmax())
    shares = logit_attribution(cache, answer).heads()[:, :, 0]  # (layers, heads)
    title = f"direct share of each head in the logit of {CHARS.id_to_token(answer)!r}"
    paths = [plot_head_attribution(shares, out / "circuits-heads.png", title=title).path]
    ov = ov_matrix(model, None).full().double()  # (layers, heads, E, E), E = 32
    sigma = torch.linalg.svdvals(ov)  # all 32 of each head: zero beyond the rank
    title = "singular values of each head's OV matrix W_OV = W_V W_O, 32 × 32 of rank ≤ D = 8"
    path = plot_singular_values(sigma, out / "circuits-ov.png", log=False, title=title).path
    paths.append(path)
    return paths


def road_to_qk(out: Path, steps: int) -> list[Path]:
    """The three attention scores trained with the built-in road-to-qk config (its own 600
    steps, or ``--steps`` when given): each mean pattern and validation figures."""
    from glassformer.examples.road_to_qk import compare, plot_results

    short = {} if steps == STEPS else {"steps": steps, "warmup": min(steps, 50)}
    with tempfile.TemporaryDirectory() as runs:
        results = compare(runs, **short)
    return [plot_results(results, out / "road-to-qk.png")]


PICTURES = {
    "attention": attention,
    "multi-head": multi_head,
    "norms-residuals": norms_residuals,
    "positional": positional,
    "families": families,
    "tokenization": tokenization,
    "training": training,
    "generation": generation,
    "graphs": graphs,
    "circuits": circuits,
    "road-to-qk": road_to_qk,
}


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the PNGs")
    parser.add_argument("--only", nargs="+", choices=sorted(PICTURES), help="these pages only")
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float rounding, hence the same pictures, everywhere
    written = []
    try:
        for name in args.only or PICTURES:
            for path in PICTURES[name](args.out, args.steps):
                print(path)
                written.append(path)
    finally:
        torch.set_num_threads(threads)
    return written


if __name__ == "__main__":
    main()
