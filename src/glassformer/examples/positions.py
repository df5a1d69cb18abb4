"""Positions without positional encodings: a causal decoder can count, an encoder cannot.

What Happens in A Transformer Layer, "Appendix: Positional encoding": self-attention is
equivariant to permutations of its input, so an encoder without a positional encoding cannot
tell positions apart; but "positional encoding can be dropped in theory when employing causal
masks as, in such cases, the transformer layer is no longer equivariant".

The experiment: every sequence is a <BOS> (token 0) followed by T - 1 tokens drawn at random
(fresh ones every step, so nothing can be memorised), and the target at position n is n itself,
a classification into T classes read from the last hidden state by a linear head. The model is
the same in every arm, token embedding -> ``glassformer.nn.Encoder`` -> Linear(C, T), trained
end to end:

  * encoder, no positional encoding: each token's output depends on its own token and on the
    set of tokens around it, never on where it is; only <BOS> gives its position away (it is
    always at 0), so the best it can do is 2/T (position 0 always, the others 1/(T - 1));
  * encoder, sinusoids: r_n is added to each token, and reading n back is easy (≈ 100%);
  * decoder (causal mask), no positional encoding: position n sees n + 1 tokens, and attending
    to all of them alike gives <BOS> the weight 1/(n + 1), a number that says n (≈ 100%).

    python -m glassformer.examples.positions [--seeds 3] [--steps 200] [--length 16]
                                             [--pictures DIR]

``--length`` is at most ``MAX_LENGTH`` (256): the attention weights of a step grow as T².
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

import torch
from torch import Tensor, nn

from ..nn import Encoder, TokenEmbedding, make_positional_encoding
from ._command import ArgumentParser, command, picture_folder

__all__ = ["ARMS", "MAX_LENGTH", "PositionProbe", "accuracy_by_position", "bos_weights"]
__all__ += ["chance", "compare", "main", "pictures", "sequences", "train_and_test"]

# arm -> (causal mask, positional encoding)
ARMS: dict[str, tuple[bool, str]] = {
    "encoder, no positions": (False, "none"),
    "encoder, sinusoids": (False, "sinusoidal"),
    "decoder, no positions": (True, "none"),
}
BOS = 0
ADDED = ("none", "sinusoidal", "learned")  # the encodings added to the input (not rotary)
MAX_LENGTH = 256  # the longest T: each step's attention weights grow as T² (256: ~0.5 s on a core)


def chance(length: int) -> float:
    """The best accuracy without any positional information: <BOS> is at 0, the other
    positions are a guess among length - 1."""
    return 2 / length


def sequences(batch: int, length: int, vocab_size: int, generator: torch.Generator) -> Tensor:
    """(batch, length) token ids: <BOS> (0), then tokens drawn uniformly from 1..vocab_size-1."""
    ids = torch.randint(1, vocab_size, (batch, length), generator=generator)
    ids[:, 0] = BOS
    return ids


class PositionProbe(nn.Module):
    """ids (B, T) -> TokenEmbedding (+ r_n) -> Encoder (causal or not) -> Linear -> (B, T, T):
    at each position, logits over the position indices 0..T-1. ``positional``: one of
    ``ADDED`` (rotary positions rotate queries and keys inside attention, not the input)."""

    def __init__(
        self,
        *,
        causal: bool,
        positional: str,
        length: int = 16,
        vocab_size: int = 32,
        d_model: int = 32,
        n_layer: int = 2,
        n_head: int = 2,
    ) -> None:
        super().__init__()
        if positional not in ADDED:
            raise ValueError(
                f"positional={positional!r}: the probe adds r_n to the input, so one of {ADDED}"
            )
        self.causal = causal
        self.embed = TokenEmbedding(vocab_size, d_model)
        self.pos_embed = make_positional_encoding(positional, d_model, length)
        self.stack = Encoder(
            n_layer, d_model, n_head, 2 * d_model, norm_first=True, activation="gelu"
        )
        self.head = nn.Linear(d_model, length)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.pos_embed(self.embed(ids))  # x_n + r_n (r_n = 0 without an encoding)
        return self.head(self.stack(x, causal=self.causal))  # (B, T, T)


def train_and_test(
    arm: str,
    *,
    seed: int = 0,
    steps: int = 200,
    length: int = 16,
    batch: int = 32,
    lr: float = 1e-2,
    test_batch: int = 256,
) -> tuple[float, PositionProbe]:
    """Train the arm's probe for ``steps`` AdamW steps (a one-cycle schedule peaking at
    ``lr``) on fresh random sequences; (the share of positions predicted right in
    ``test_batch`` new sequences, the model in eval mode)."""
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r} is not known; choose one of {list(ARMS)}")
    checks = (
        ("steps", steps, 0),
        ("batch", batch, 1),
        ("test_batch", test_batch, 1),
    )
    for name, value, low in checks:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if isinstance(length, bool) or not isinstance(length, int) or not 2 <= length <= MAX_LENGTH:
        raise ValueError(f"length must be an int from 2 to {MAX_LENGTH}, got {length!r}")
    causal, positional = ARMS[arm]
    torch.manual_seed(seed)
    model = PositionProbe(causal=causal, positional=positional, length=length)
    data = torch.Generator().manual_seed(seed)
    vocab = model.embed.vocab_size
    target = torch.arange(length).expand(batch, length)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=max(steps, 1))
    for _ in range(steps):
        logits = model(sequences(batch, length, vocab, data))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    test = sequences(test_batch, length, vocab, data)
    return accuracy_by_position(model, test).mean().item(), model


def accuracy_by_position(model: PositionProbe, ids: Tensor) -> Tensor:
    """(T,): at each position n, the share of the sequences ``ids`` (B, T) where the model
    predicts n."""
    with torch.no_grad():
        guess = model(ids).argmax(-1)  # (B, T)
    return (guess == torch.arange(ids.shape[1])).float().mean(0)


def bos_weights(model: PositionProbe, ids: Tensor, layer: int = 0) -> Tensor:
    """(H, T): the attention weight each head of ``layer`` gives <BOS> at each position,
    averaged over the sequences ``ids`` (B, T)."""
    from ..inspect import capture

    with torch.no_grad(), capture(model) as rec:
        model(ids)
    return rec.weights()[layer][:, :, :, 0].mean(0)  # (H, T)


def compare(seeds: Iterable[int] = (0,), **options) -> dict[str, list[float]]:
    """{arm: [test accuracy for each seed]}, every arm trained with the same options."""
    return {arm: [train_and_test(arm, seed=s, **options)[0] for s in seeds] for arm in ARMS}


def pictures(out: Path, *, steps: int = 200, length: int = 16, seed: int = 0) -> list[Path]:
    """One PNG, ``out``/positions-probe.png: left, each arm's accuracy at each position (seed
    ``seed``); right, the weight the trained decoder's first layer gives <BOS> at each
    position, beside 1/(n + 1), the weight of attending to all n + 1 tokens alike."""
    from ..inspect._draw import new_figure, save

    test = sequences(512, length, 32, torch.Generator().manual_seed(seed + 1000))
    fig = new_figure((10.0, 3.6), 100)
    fig.set_layout_engine("constrained")
    left, right = fig.subplots(1, 2)
    n = torch.arange(length)
    for (arm, _), marker in zip(ARMS.items(), "osD", strict=True):
        model = train_and_test(arm, seed=seed, steps=steps, length=length)[1]
        by_position = accuracy_by_position(model, test)
        left.plot(n, by_position, marker=marker, ms=4, label=f"{arm}: {by_position.mean():.3f}")
        if arm == "decoder, no positions":
            for h, w in enumerate(bos_weights(model, test)):
                right.plot(n, w, marker="o", ms=4, label=f"decoder, layer 0, head {h}")
    guess = 1 / (length - 1)
    left.axhline(guess, color="grey", ls=":", label=f"1/(T - 1) = {guess:.3f}")
    left.set(xlabel="position n", ylabel="share of positions predicted right", ylim=(-0.03, 1.05))
    title = f"predicting n from the last hidden state (T = {length}, {steps} steps)"
    left.set_title(title, fontsize=9)
    left.legend(fontsize=7, loc="center right")
    right.plot(n, 1 / (n + 1), color="grey", ls=":", label="1/(n + 1): every token alike")
    right.set(xlabel="position n", ylabel="attention weight on <BOS>", ylim=(0, 1.05))
    right.set_title("the causal decoder counts: its weight on <BOS> falls with n", fontsize=9)
    right.legend(fontsize=7)
    return [save(fig, out / "positions-probe.png", {"accuracy": left, "bos": right}).path]


def main(argv: list[str] | None = None) -> int:
    """The command line; its exit status: 2 and one line for a mistake, found before anything
    is trained, 130 on Ctrl-C (_command.py)."""
    return command(_main, argv)


def _main(argv: list[str] | None) -> int:
    parser = ArgumentParser(
        prog="python -m glassformer.examples.positions",
        description="Predict each token's position: encoder and causal decoder, with and "
        "without a positional encoding.",
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument(
        "--length", type=int, default=16, help=f"sequence length T, 2..{MAX_LENGTH} (default 16)"
    )
    parser.add_argument("--pictures", type=Path, metavar="DIR", help="draw seed 0's models")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.steps < 0 or not 2 <= args.length <= MAX_LENGTH:
        parser.error(
            f"--seeds must be >= 1, --steps >= 0 and --length from 2 to {MAX_LENGTH}, got "
            f"{args.seeds}, {args.steps} and {args.length}"
        )
    if args.pictures is not None:
        picture_folder(args.pictures, "--pictures")
    result = compare(range(args.seeds), steps=args.steps, length=args.length)
    print(f"chance (no positions, <BOS> at 0): {chance(args.length):.3f}")
    for arm, accuracy in result.items():
        values = " ".join(f"{a:.3f}" for a in accuracy)
        print(f"{arm:24s} mean {statistics.mean(accuracy):.3f}   per seed: {values}")
    if args.pictures is not None:
        for path in pictures(args.pictures, steps=args.steps, length=args.length):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
