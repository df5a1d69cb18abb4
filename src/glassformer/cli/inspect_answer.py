"""What ``glassformer inspect --circuits`` analyses: one logit of one prediction.

The value analysed is the logit of --answer at the inspected position (a classifier: the
class score of the pooled vector), or with --wrong the difference

    logit[answer] - logit[wrong]

which the attribution, the logit lens and activation patching all read (``Prediction.metric``).
--answer defaults to the model's top token (or class); --answer and --wrong are a single token
of the model's tokenizer, or for a classifier a class name or index, checked before anything
is drawn (``chosen_tokens``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from torch import Tensor

from ..models.heads import ClassificationHead
from ..models.tokens import drop_undefined_ids

__all__ = ["Prediction", "analysed", "answer_pair", "chosen_tokens"]


def chosen_tokens(model, args: argparse.Namespace) -> tuple[int | None, int | None]:
    """The ids (or classes) of --answer and --wrong, checked before anything is drawn."""
    answer = None if args.answer is None else _token_id(model, args.answer, "--answer")
    wrong = None if args.wrong is None else _token_id(model, args.wrong, "--wrong")
    if wrong is not None and wrong == answer:
        raise ValueError(f"--wrong {args.wrong!r} is the --answer token: give a different one")
    return answer, wrong


@dataclass
class Prediction:
    """What is analysed: logit ``answer`` (minus ``wrong``) at ``position`` of ``stack``."""

    stack: str
    position: int | None  # None: a classifier's pooled vector
    answer: int
    wrong: int | None
    names: list[str]  # the vocabulary's tokens or the classes, for labels

    def describe(self) -> str:
        say = repr(self.names[self.answer])
        if self.wrong is not None:
            say += f" minus {self.names[self.wrong]!r}"
        where = "the pooled vector" if self.position is None else f"{self.stack} position"
        where += "" if self.position is None else f" {self.position}"
        kind = "class score" if self.position is None else "logit"
        return f"the {kind} of {say} at {where}"

    def metric(self, out) -> Tensor:
        logits = out.logits[0] if self.position is None else out.logits[0, self.position]
        value = logits[self.answer]
        return value if self.wrong is None else value - logits[self.wrong]


def analysed(model, output, stack: str, position: int, answer, wrong) -> Prediction:
    """The Prediction of ``output`` (the model's run on the inspected input): --answer, or
    the model's top token (a classifier: its top class) when none was given."""
    if isinstance(model, ClassificationHead):
        names = model.class_names()
        scores, where = output.logits[0], None
    else:
        tok = model.tokenizer
        names = [tok.id_to_token(i) for i in range(min(tok.vocab_size, model.config.vocab_size))]
        scores, where = drop_undefined_ids(output.logits[0, position], tok), position
    answer = int(scores.argmax()) if answer is None else answer
    return Prediction(stack, where, answer, wrong, names)


def _token_id(model, text: str, flag: str) -> int:
    """The class (name or index) of a classifier, else the one token ``text`` encodes to."""
    if isinstance(model, ClassificationHead):
        labels = model.class_names()
        if text in labels:
            return labels.index(text)
        n = model.config.n_classes
        if text.isdigit() and int(text) < n:
            return int(text)
        allowed = ", ".join(labels)
        raise ValueError(f"{flag} {text!r} is not a class of this classifier: allowed {allowed}")
    ids = model.tokenizer.encode(text, allowed_special=True)
    if len(ids) != 1:
        pieces = [model.tokenizer.id_to_token(i) for i in ids]
        raise ValueError(
            f"{flag} {text!r} is {len(ids)} tokens under the model's tokenizer ({pieces}): "
            "give exactly one token"
        )
    return ids[0]


def answer_pair(pred: Prediction) -> int | tuple[int, int]:
    """The target of ``logit_attribution``: the answer, or (answer, wrong) for a difference."""
    return pred.answer if pred.wrong is None else (pred.answer, pred.wrong)
