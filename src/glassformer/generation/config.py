"""GenerationConfig: every setting of ``generate()``, validated when it is made.

DInference (Phuong & Hutter, "Formal Algorithms for Transformers" (2022), Algorithm 14)
samples the next token from P ∝ p^{1/τ}, τ the temperature, one token at a time. The settings
here extend it as users of the field expect: τ = 0 picks the most likely token (greedy),
top-k / top-p keep only the likeliest tokens before sampling, ``num_beams`` > 1 runs beam
search, and generation of a sequence ends at an <EOS> id, at a stop string or after
``max_new_tokens``.

A bad value is refused with a ValueError that names the setting, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..names import MAX_BEAMS

__all__ = ["EARLY_STOPPING", "MAX_BEAMS", "GenerationConfig"]

EARLY_STOPPING = (True, False, "never")


@dataclass
class GenerationConfig:
    """How to generate.

    max_new_tokens: tokens to generate at most per sequence (>= 1).
    temperature: τ in P ∝ p^{1/τ}; 0 = greedy (argmax), 1 = the model's distribution.
    top_k: sample only from the k likeliest tokens (0 = off). Ties with the k-th are kept.
    top_p: nucleus sampling: keep the likeliest tokens whose probabilities sum to >= top_p
        (1.0 = off). Applied after temperature and top-k.
    num_beams: > 1 runs beam search (deterministic; top_k / top_p / temperature do not apply);
        at most ``MAX_BEAMS`` (256), as every beam holds its own copy of the KV cache.
    length_penalty: beam search ranks finished sequences by log P / n^length_penalty, n the
        number of generated tokens (> 0 favours longer sequences, < 0 shorter ones).
    early_stopping: beam search stops a prompt when ``num_beams`` finished sequences exist
        (True); when the best running beam can no longer beat them at its current length
        (False); or only when it could not beat them even at max_new_tokens ("never").
    eos_id: id(s) that end a sequence; None = the tokenizer's <EOS> when a tokenizer is given,
        else none; () = never stop at a token.
    pad_id: filler after a sequence ends and for left padding; None = the model's ``pad_id``.
    stop_strings: end a sequence once its decoded text contains one (needs a tokenizer).
    seed: seed of the torch.Generator used for sampling (None: a fresh random seed); the
        global torch RNG is never used.
    use_cache: keep keys/values of past positions (a step costs one position) instead of
        recomputing the whole prefix every step.
    return_logits: also return the raw logits of every step (greedy and sampling).
    """

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = True
    eos_id: int | tuple[int, ...] | None = None
    pad_id: int | None = None
    stop_strings: tuple[str, ...] = ()
    seed: int | None = None
    use_cache: bool = True
    return_logits: bool = False

    def __post_init__(self) -> None:
        _int("max_new_tokens", self.max_new_tokens, 1, "an int >= 1")
        _number("temperature", self.temperature, "a number >= 0 (0 = greedy)", low=0.0)
        _int("top_k", self.top_k, 0, "an int >= 0 (0 = off)")
        _number("top_p", self.top_p, "a number in (0, 1] (1 = off)", low=0.0, high=1.0)
        if self.top_p <= 0:
            raise ValueError(f"top_p={self.top_p!r} is not allowed: a number in (0, 1] (1 = off)")
        allowed = f"an int in [1, {MAX_BEAMS}] (1 = no beam search)"
        _int("num_beams", self.num_beams, 1, allowed)
        if self.num_beams > MAX_BEAMS:
            raise ValueError(f"num_beams={self.num_beams} is not allowed: {allowed}")
        _number("length_penalty", self.length_penalty, "a finite number")
        if not any(self.early_stopping is v or self.early_stopping == v for v in EARLY_STOPPING):
            raise ValueError(
                f"early_stopping={self.early_stopping!r} is not allowed: True, False or 'never'"
            )
        if self.eos_id is not None:
            ids = (self.eos_id,) if isinstance(self.eos_id, int) else self.eos_id
            if isinstance(ids, str) or not isinstance(ids, Sequence):
                raise ValueError(
                    f"eos_id={self.eos_id!r} is not allowed: an id, a sequence of ids or None"
                )
            for i in ids:
                _int("eos_id", i, 0, "ids >= 0")
            self.eos_id = tuple(ids)
        if self.pad_id is not None:
            _int("pad_id", self.pad_id, 0, "an id >= 0 or None")
        stops = (self.stop_strings,) if isinstance(self.stop_strings, str) else self.stop_strings
        if not isinstance(stops, Sequence) or not all(isinstance(s, str) and s for s in stops):
            raise ValueError(
                f"stop_strings={self.stop_strings!r} is not allowed: a sequence of non-empty "
                "strings"
            )
        self.stop_strings = tuple(stops)
        if self.seed is not None:
            _int("seed", self.seed, 0, "an int in [0, 2**64) or None")
            if self.seed >= 2**64:
                raise ValueError(f"seed={self.seed} is not allowed: an int in [0, 2**64) or None")
        for name in ("use_cache", "return_logits"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} is not allowed: True or False")
        if self.num_beams > 1:
            self._check_beam_settings()

    def _check_beam_settings(self) -> None:
        beams = f"with num_beams={self.num_beams}, as beam search"
        sample = "does not sample: allowed with num_beams > 1"
        if self.top_k != 0:
            raise ValueError(
                f"top_k={self.top_k} is not allowed {beams} {sample} is top_k=0 "
                "(or num_beams=1 to sample)"
            )
        if self.top_p != 1.0:
            raise ValueError(
                f"top_p={self.top_p} is not allowed {beams} {sample} is top_p=1.0 "
                "(or num_beams=1 to sample)"
            )
        if self.temperature not in (0.0, 1.0):
            raise ValueError(
                f"temperature={self.temperature} is not allowed {beams} {sample} are "
                "temperature=1.0 and 0 (or num_beams=1 to sample)"
            )
        if self.return_logits:
            raise ValueError(
                f"return_logits=True is not allowed {beams} keeps no logits per step: allowed "
                "with num_beams > 1 is return_logits=False"
            )

    # Derived -----------------------------------------------------------------------------------
    @property
    def do_sample(self) -> bool:
        """True when the next token is drawn at random (temperature > 0, no beams)."""
        return self.num_beams == 1 and self.temperature > 0.0

    def replace(self, **changes: Any) -> GenerationConfig:
        """A copy with ``changes`` applied and validated (unknown names are a ValueError)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown generation settings {unknown}; allowed: {sorted(known)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GenerationConfig:
        return cls().replace(**data)


def _int(name: str, value: Any, low: int, allowed: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name}={value!r} is not allowed: {allowed}")


def _number(
    name: str, value: Any, allowed: str, *, low: float | None = None, high: float | None = None
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        raise ValueError(f"{name}={value!r} is not allowed: {allowed}")
