"""Draw the block diagrams of "The transformer in one picture" (docs/concepts/one-picture.md)
as SVG files, by hand-placed boxes, arrows and text: no plotting library, no randomness, so the
same files come out on every machine.

    python docs/scripts/diagrams.py                 # into docs/images/diagrams/
    python docs/scripts/diagrams.py --out /tmp/dia

Each diagram is 700 units wide (the text column) and scales with it (viewBox); its text is real
<text> in the system's fonts (a font-family list, nothing fetched), with a <title> and a <desc>
for screen readers. A label may hold ``_{sub}``, ``^{sup}`` and ```code``` (monospace).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from xml.sax.saxutils import escape

OUT = Path(__file__).resolve().parents[1] / "images" / "diagrams"
WIDTH = 700
SANS = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"
MONO = "SFMono-Regular, Menlo, Consolas, 'Liberation Mono', 'DejaVu Sans Mono', monospace"
INK, GREY = "#212121", "#616161"
# fill, stroke: light fills that read on Material's light scheme
KINDS = {
    "plain": ("#f5f5f5", "#9e9e9e"),
    "embed": ("#f3e5f5", "#8e24aa"),
    "attention": ("#e3f2fd", "#1e88e5"),
    "norm": ("#fff8e1", "#f9a825"),
    "mlp": ("#e8f5e9", "#43a047"),
    "head": ("#fce4ec", "#d81b60"),
}
MARKUP = re.compile(r"_\{([^}]*)\}|\^\{([^}]*)\}|`([^`]*)`")


class Drawing:
    """An SVG picture built one shape at a time; ``svg()`` gives its text."""

    def __init__(self, height: int, title: str, desc: str) -> None:
        self.height, self.title, self.desc = height, title, desc
        self.shapes: list[str] = []

    def text(self, x, y, label, *, size=13, anchor="middle", weight="normal", fill=INK):
        """A line of text at baseline ``y``, markup rendered as tspans."""
        bold = ' font-weight="bold"' if weight == "bold" else ""
        self.shapes.append(
            f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
            f"{bold}>{spans(label, size)}</text>"
        )

    def box(self, x, y, w, h, label, kind="plain", *, size=13):
        """A rounded box with its label centred (lines split at "\\n")."""
        fill, stroke = KINDS[kind]
        self.shapes.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1.5"/>'
        )
        lines = label.split("\n")
        first = y + h / 2 - (len(lines) - 1) * (size + 3) / 2 + size * 0.35
        for i, line in enumerate(lines):
            self.text(_num(x + w / 2), _num(first + i * (size + 3)), line, size=size)

    def arrow(self, *points, label=None):
        """A line through ``points`` ending in an arrowhead; ``label`` (a shape) beside its
        first segment."""
        path = " ".join(f"{x},{y}" for x, y in points)
        self.shapes.append(
            f'<polyline points="{path}" fill="none" stroke="{GREY}" stroke-width="1.5" '
            'marker-end="url(#arrowhead)"/>'
        )
        if label:
            (x0, y0), y1 = points[0], points[1][1]
            self.text(x0 + 8, _num((y0 + y1) / 2 + 5), label, size=13, anchor="start", fill=GREY)

    def add(self, x, y):
        """The residual addition: a circled plus on the stream."""
        self.shapes.append(
            f'<circle cx="{x}" cy="{y}" r="10" fill="#ffffff" stroke="{GREY}" stroke-width="1.5"/>'
            f'<path d="M{x - 6},{y} H{x + 6} M{x},{y - 6} V{y + 6}" stroke="{INK}" '
            'stroke-width="1.5"/>'
        )

    def dot(self, x, y):
        self.shapes.append(f'<circle cx="{x}" cy="{y}" r="3" fill="{GREY}"/>')

    def frame(self, x, y, w, h, label):
        """A dashed frame around a repeated stack, ``label`` ("× L") left of its top corner."""
        self.shapes.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="8" fill="none" '
            f'stroke="{GREY}" stroke-width="1" stroke-dasharray="4 3"/>'
        )
        self.text(x - 4, y + 15, label, size=12, anchor="end", fill=GREY)

    def mask(self, x, y, causal: bool, cell: int = 7):
        """A 4 × 4 grid of which keys (columns) each query (row) may read: blue may, white may
        not (the causal mask hides the upper triangle)."""
        for n in range(4):
            for m in range(4):
                seen = m <= n or not causal
                self.shapes.append(
                    f'<rect x="{x + m * cell}" y="{y + n * cell}" width="{cell}" height="{cell}" '
                    f'fill="{"#64b5f6" if seen else "#ffffff"}" stroke="{GREY}" '
                    'stroke-width="0.5"/>'
                )

    def line(self, x1, y1, x2, y2, *, dashed=False):
        dash = ' stroke-dasharray="4 4"' if dashed else ""
        self.shapes.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#bdbdbd"{dash}/>'
        )

    def svg(self) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {self.height}" '
            f'width="{WIDTH}" height="{self.height}" role="img" aria-labelledby="title desc" '
            f'font-family="{SANS}">'
        )
        defs = (
            '<defs><marker id="arrowhead" viewBox="0 0 10 10" refX="9" refY="5" '
            'markerWidth="7" markerHeight="7" orient="auto">'
            f'<path d="M0,0 L10,5 L0,10 z" fill="{GREY}"/></marker></defs>'
        )
        background = f'<rect width="{WIDTH}" height="{self.height}" fill="#ffffff"/>'
        body = [
            head,
            f'<title id="title">{escape(self.title)}</title>',
            f'<desc id="desc">{escape(self.desc)}</desc>',
            defs,
            background,
            *self.shapes,
            "</svg>",
        ]
        return "\n".join(body) + "\n"


def spans(label: str, size: int) -> str:
    """``label``'s markup as tspans: a subscript or superscript smaller and shifted (each
    shift undone by the next piece), code in the monospace font."""
    pieces, at = [], 0
    for m in MARKUP.finditer(label):
        pieces += [(label[at : m.start()], "")]
        pieces += [(m[1], "sub")] if m[1] is not None else []
        pieces += [(m[2], "sup")] if m[2] is not None else []
        pieces += [(m[3], "code")] if m[3] is not None else []
        at = m.end()
    pieces.append((label[at:], ""))
    out, shift = [], 0
    for text, kind in pieces:
        if not text:
            continue
        target = {"sub": round(size * 0.3), "sup": -round(size * 0.4)}.get(kind, 0)
        attrs = f' dy="{target - shift}"' if target != shift else ""
        shift = target
        if kind in ("sub", "sup"):
            attrs += f' font-size="{round(size * 0.75)}"'
        if kind == "code":
            attrs += f' font-family="{MONO}" font-size="{size - 1}"'
        out.append(f"<tspan{attrs}>{escape(text)}</tspan>" if attrs else escape(text))
    return "".join(out)


def _num(v: float) -> str:
    """A coordinate as the file writes it: an integer, or one decimal."""
    return str(int(v)) if v == int(v) else f"{v:.1f}"


# ---------------------------------------------------------------- the diagrams


def layer() -> Drawing:
    """One layer, pre-norm and post-norm side by side: the stream X (B, T, C) runs down the
    left of each column, each sub-layer branches off it and is added back."""
    d = Drawing(
        400,
        "One transformer layer, pre-norm and post-norm",
        "Two columns. In each, the residual stream X of shape (B, T, C) runs from top to bottom. "
        "Pre-norm, left: the stream branches into LayerNorm then multi-head attention, whose "
        "output is added back to the stream; then it branches into LayerNorm then FeedForward, "
        "added back; the stream itself is never normalised. Post-norm, right: the stream "
        "branches into multi-head attention, the output is added back and the sum goes through "
        "LayerNorm; then FeedForward, added back, then LayerNorm. The output has the shape of "
        "the input, (B, T, C).",
    )
    d.line(350, 10, 350, 390, dashed=True)
    sublayers = (
        ("multi-head attention `attn`", "attention", "ln1"),
        ("FeedForward `mlp`", "mlp", "ln2"),
    )
    for ox, pre in ((0, True), (350, False)):
        sx, bx, bw = ox + 70, ox + 145, 180  # the stream's x, the branch boxes' left and width
        cx = bx + bw // 2
        title = "Pre-norm (GPT-2, most later models)" if pre else "Post-norm (Vaswani et al., BERT)"
        d.text(ox + 175, 26, title, weight="bold")
        d.text(ox + 175, 46, "X ← X + F(LayerNorm(X))" if pre else "X ← LayerNorm(X + F(X))")
        d.text(sx, 70, "X  `(B, T, C)`")
        y = 80  # where the stream's next segment starts
        for top, (name, kind, norm) in zip((88, 218), sublayers, strict=True):
            d.dot(sx, top + 14)
            d.arrow((sx, top + 14), (bx, top + 14))
            if pre:  # the norm on the branch, before the sub-layer
                d.box(bx, top, bw, 28, f"LayerNorm `{norm}`", "norm")
                d.arrow((cx, top + 28), (cx, top + 46))
                d.box(bx, top + 46, bw, 34, name, kind)
                plus = top + 102
                d.arrow((cx, top + 80), (cx, plus), (sx + 10, plus))
                d.arrow((sx, y), (sx, plus - 10))
                y = plus + 10
            else:  # the sub-layer on the branch, the norm on the stream after the sum
                d.box(bx, top - 3, bw, 34, name, kind)
                plus = top + 56
                d.arrow((cx, top + 31), (cx, plus), (sx + 10, plus))
                d.arrow((sx, y), (sx, plus - 10))
                d.arrow((sx, plus + 10), (sx, plus + 28))
                d.box(sx - 62, plus + 28, 124, 28, f"LayerNorm `{norm}`", "norm")
                y = plus + 56
            d.add(sx, plus)
        d.arrow((sx, y), (sx, 372))
        d.text(sx, 390, "X  `(B, T, C)`")
    return d


def families() -> Drawing:
    """The three families: the same blocks, a causal or a bidirectional mask, a head on top;
    the encoder-decoder's decoder reads the encoder's output Z through cross-attention."""
    d = Drawing(
        730,
        "The three families: decoder-only, encoder-only, encoder-decoder",
        "Three models built from the same blocks; a small grid beside each self-attention shows "
        "which keys (columns) each query (row) may read. Decoder-only (GPT): token ids, "
        "embedding and positions, L blocks of causal self-attention (the lower triangle) and "
        "FeedForward, a final norm, and the LM head giving logits of shape (B, T, N_V). "
        "Encoder-only (BERT): the same with bidirectional self-attention (the full grid), and "
        "either a masked-LM head giving logits (B, T, N_V) or a classifier head giving one row "
        "of class logits per example. Encoder-decoder: an encoder stack reads the source ids "
        "(B, S) and gives Z of shape (B, S, C); a decoder stack reads the target ids (B, T) with "
        "causal self-attention, then cross-attention whose keys and values come from Z, then "
        "FeedForward, and ends in an LM head giving logits (B, T, N_V).",
    )
    d.line(350, 10, 350, 330, dashed=True)
    d.line(10, 345, 690, 345, dashed=True)
    lm_head = "LM head (unembedding)\nlogits  `(B, T, N_V)`"
    for ox, causal in ((0, True), (350, False)):
        cx = ox + 150
        d.text(cx, 22, "Decoder-only (GPT)" if causal else "Encoder-only (BERT)", weight="bold")
        d.text(cx, 40, "generates text" if causal else "a vector per token, or a class")
        attention = "causal self-attention" if causal else "bidirectional self-attention"
        y = _stack(d, cx, 60, "token ids  `(B, T)`", "`(B, T, C)`",
                   [(attention, causal), ("FeedForward", None)])  # fmt: skip
        d.box(cx - 100, y, 200, 28, "final norm", "norm")
        heads = [(cx, 200, lm_head)] if causal else [
            (cx - 65, 120, "masked-LM head\n`(B, T, N_V)`"),
            (cx + 65, 120, "classifier head\n`(B, n_classes)`"),
        ]  # fmt: skip
        for x, width, label in heads:
            d.arrow((x, y + 28), (x, y + 46))
            d.box(x - width // 2, y + 46, width, 38, label, "head", size=13 if causal else 12)
    d.text(350, 368, "Encoder-decoder (Vaswani et al., BART)", weight="bold")
    d.text(350, 386, "translates: reads a source, writes a target")
    y = _stack(d, 175, 404, "source ids  `(B, S)`", "`(B, S, C)`",
               [("bidirectional self-attention", False), ("FeedForward", None)])  # fmt: skip
    d.box(75, y, 200, 28, "final norm", "norm")
    z = y + 28  # where the encoder's output Z leaves it
    y = _stack(d, 525, 404, "target ids  `(B, T)`", "`(B, T, C)`", [
        ("causal self-attention", True), ("cross-attention", None), ("FeedForward", None),
    ])  # fmt: skip
    d.box(425, y, 200, 28, "final norm", "norm")
    d.arrow((525, y + 28), (525, y + 46))
    d.box(425, y + 46, 200, 38, lm_head, "head")
    cross = 404 + 72 + 10 + 46 + 15  # the centre of the decoder's second box, cross-attention
    d.arrow((175, z), (175, z + 22), (395, z + 22), (395, cross), (425, cross))
    d.text(285, z + 16, "Z  `(B, S, C)`", size=12, fill=GREY)
    d.text(389, z - 14, "keys and values", size=12, anchor="end", fill=GREY)
    return d


def _stack(d: Drawing, cx, top, ids, shape, sublayers) -> int:
    """Token ids, the embedding, then a frame "× L" around the sub-layers (a mask grid beside
    each self-attention: ``causal`` True or False; None for no grid), then the arrow out.
    Returns the y where that arrow ends."""
    d.text(cx, top, ids)
    d.arrow((cx, top + 4), (cx, top + 20))
    d.box(cx - 100, top + 20, 200, 28, "embedding + positions", "embed")
    d.arrow((cx, top + 48), (cx, top + 72), label=shape)
    frame = y = top + 72
    for i, (name, causal) in enumerate(sublayers):
        y += 10 if i == 0 else 16
        if i:
            d.arrow((cx, y - 16), (cx, y))
        d.box(cx - 100, y, 200, 30, name, "mlp" if name == "FeedForward" else "attention")
        if causal is not None:
            d.mask(cx + 112, y + 1, causal)
        y += 30
    d.frame(cx - 110, frame, 260, y + 10 - frame, "× L")
    d.arrow((cx, y + 10), (cx, y + 28))
    return y + 28


def dataflow() -> Drawing:
    """From token ids (B, T) to logits (B, T, N_V): the shape on every arrow, the formula of
    every step beside it."""
    d = Drawing(
        516,
        "The data flow of a decoder, with the shape of every tensor",
        "From top to bottom: token ids of shape (B, T); the token embedding plus the positions "
        "gives the residual stream X of shape (B, T, C); L blocks each map (B, T, C) to "
        "(B, T, C); a final norm; the unembedding gives logits of shape (B, T, N_V); a softmax "
        "over each row gives the next token's probabilities. Beside each step, its formula.",
    )
    cx = 170
    steps = [  # the box, its colour, its formula, the shape of what leaves it
        ("token ids", "plain", "x[n]: the id of the token at position n", "`(B, T)`"),
        ("token embedding + positions", "embed", "x_{n}^{(0)} = W_{e}[x[n]] + r_{n}",
         "`(B, T, C)`"),
        ("block 1", "plain", "X^{(1)} = Block(X^{(0)})", "`(B, T, C)`"),
        ("blocks 2, …, L − 1", "plain", "each: attention, then FeedForward", "`(B, T, C)`"),
        ("block L", "plain", "X^{(L)} = Block(X^{(L−1)})", "`(B, T, C)`"),
        ("final norm", "norm", "LayerNorm(X^{(L)})  (pre-norm: `ln_final`)", "`(B, T, C)`"),
        ("unembedding", "head", "logits = X W_{u}^{T}  (W_{u} = W_{e} when tied)",
         "`(B, T, N_V)`  logits"),
        ("softmax of each row", "plain", "the next token's probabilities, one row per n", None),
    ]  # fmt: skip
    y = 14
    for name, kind, formula, shape in steps:
        d.box(cx - 120, y, 240, 32, name, kind)
        d.text(310, y + 21, formula, anchor="start")
        if shape:
            d.arrow((cx, y + 32), (cx, y + 62), label=shape)
            y += 62
    d.text(350, 504, "B examples · T positions · C width · L blocks · N_{V} tokens in the "
           "vocabulary", size=12, fill=GREY)  # fmt: skip
    return d


DIAGRAMS = {"layer": layer, "families": families, "dataflow": dataflow}


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the SVG files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in DIAGRAMS.items():
        path = args.out / f"{name}.svg"
        path.write_text(draw().svg(), encoding="utf-8")
        print(path)
        written.append(path)
    return written


if __name__ == "__main__":
    main()
