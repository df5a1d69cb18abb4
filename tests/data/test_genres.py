"""shakespeare-genre: passages of spoken lines labelled by the kind of their play, split by
play as the corpus is, with no speaker name to give the play away."""

import pytest

from glassformer.data import load_dataset
from glassformer.data.corpora import VALIDATION_PLAYS, shakespeare_plays
from glassformer.data.genres import LABELS, genre_of_plays, spoken_lines


def test_the_plays_are_labelled_by_their_folder_and_split_as_the_corpus():
    genres = genre_of_plays()
    assert genres["hamlet"] == "tragedy" and genres["julius-caesar"] == "tragedy"  # Roman
    assert genres["twelfth-night"] == "comedy" and genres["richard-ii"] == "history"
    assert "the-tempest" not in genres and "measure-for-measure" not in genres  # left out
    assert len(genres) == 29
    validation = {play for play in genres if play in VALIDATION_PLAYS}
    assert validation == {"julius-caesar", "richard-ii", "twelfth-night"}


def test_a_passage_is_four_spoken_lines_in_order_without_speaker_names():
    train = load_dataset("shakespeare-genre", "train")
    assert train.task == "classification" and train.labels == LABELS
    play, play_text = shakespeare_plays("train")[0]  # A Midsummer Night's Dream
    first = "\n".join(spoken_lines(play_text)[:4])
    assert play == "a-midsummer-night-s-dream" and ("comedy", first) in train.examples
    assert "THESEUS:" in play_text and not any("THESEUS:" in t for _, t in train.examples)
    assert all(len(t.split("\n")) == 4 for _, t in train.examples)
    assert {lab for lab, _ in train.examples} == set(LABELS)


def test_the_first_batch_of_validation_holds_every_label():
    """The passages are shuffled (seed 0): an evaluation of the first batches is fair."""
    val = load_dataset("shakespeare-genre", "validation")
    assert {lab for lab, _ in val.examples[:32]} == set(LABELS)
    assert val.examples == load_dataset("shakespeare-genre", "validation").examples


def test_the_validation_split_has_every_label_and_no_train_passage():
    train = load_dataset("shakespeare-genre", "train")
    val = load_dataset("shakespeare-genre", "validation")
    assert {lab for lab, _ in val.examples} == set(LABELS)
    assert len(val) == 1968 and len(train) == 19003
    assert not set(val.examples) & set(train.examples)


def test_passages_of_another_length_and_a_bad_length():
    two = load_dataset("shakespeare-genre", "validation", lines=2)
    assert all(len(t.split("\n")) == 2 for _, t in two.examples)
    with pytest.raises(ValueError, match="lines is 0: allowed an int >= 1"):
        load_dataset("shakespeare-genre", "validation", lines=0)
