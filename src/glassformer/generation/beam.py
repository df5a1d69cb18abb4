"""Beam search: keep the N likeliest partial sequences instead of one (N = ``num_beams``).

Each step, every running beam b (score s_b = Σ log p of its tokens) proposes every token w,
scored s_b + log p(w | beam b). The best 2N of these N·V candidates are kept (N per <EOS> id
more with several), so that N of them can go on even if many end here:

  * a candidate ending in <EOS> (or a stop string, or reaching max_new_tokens) that ranks in
    the top N becomes a finished hypothesis, ranked by s / n^α (n its generated tokens,
    α = ``length_penalty``); the N best finished hypotheses are kept;
  * the N best candidates that did not end become the next running beams, and the KV cache
    rows are reordered to follow them (``Session.reorder``).

A prompt is done when no running beam can beat its N finished hypotheses: its best running
score s over n^α (n = the current length; with early_stopping="never" and α > 0 the longest
possible length) is not above the worst finished score. With early_stopping=True it is done
as soon as it has N finished hypotheses. The search ends when every prompt is done, or after
max_new_tokens. This is the algorithm of Hugging Face's ``generate(num_beams=N)`` (v5), with
which it is tested to give identical sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .config import GenerationConfig
from .decoding import Session
from .logits import check_logits
from .stopping import find_stop

__all__ = ["BeamResult", "beam_search"]

NEG = -1.0e9  # "cannot be chosen": added to a score, as Hugging Face does (ties stay ties)


@dataclass
class BeamResult:
    tokens: list[list[int]]  # the best hypothesis of each prompt
    scores: Tensor  # (B,) its length-penalised log-probability
    reasons: list[str]


def beam_search(
    session: Session,
    config: GenerationConfig,
    batch: int,
    eos_ids: tuple[int, ...],
    *,
    tokenizer=None,
) -> BeamResult:
    """Beam search over ``session`` (B rows, one per prompt) with ``config.num_beams`` beams."""
    k, steps = config.num_beams, config.max_new_tokens
    alpha, early = config.length_penalty, config.early_stopping
    stops = config.stop_strings
    if stops and tokenizer is None:
        raise ValueError(f"stop_strings={stops!r} need a tokenizer to decode the text")
    with torch.inference_mode():
        logits = session.prefill()  # (B, N_V)
    b, v = logits.shape
    device = logits.device
    n_cand = min(max(2, 1 + len(eos_ids)) * k, k * v)
    eos = torch.tensor(eos_ids, dtype=torch.long, device=device)
    top_rank = torch.arange(n_cand, device=device) < k  # (n_cand,) may finish a hypothesis
    rows = torch.arange(b, device=device)[:, None] * k  # (B, 1) first cache row of a prompt

    run_tokens = torch.zeros(b, k, steps, dtype=torch.long, device=device)  # (B, N, M)
    run_scores = torch.full((b, k), NEG, device=device)  # (B, N) Σ log p; only beam 0 at first
    run_scores[:, 0] = 0.0
    fin_tokens = torch.zeros_like(run_tokens)
    fin_scores = torch.full((b, k), NEG, device=device)  # length-penalised
    fin_len = torch.zeros(b, k, dtype=torch.long, device=device)
    fin_flag = torch.zeros(b, k, dtype=torch.bool, device=device)
    improvable = torch.ones(b, dtype=torch.bool, device=device)  # (B,) not done yet

    for i in range(steps):
        with torch.inference_mode():
            check_logits(logits)
            logp = torch.log_softmax(logits.float(), dim=-1)  # (B·N or B, N_V)
            logp = logp[:, None].expand(b, k, v) if i == 0 else logp.view(b, k, v)
            total = (logp + run_scores[..., None]).reshape(b, k * v)  # (B, N·V)
            cand_scores, cand = torch.topk(total, n_cand, dim=-1)  # (B, C), best first
            src, tok = cand // v, cand % v  # beam each candidate extends, its new token
            cand_tokens = run_tokens.gather(1, src[..., None].expand(b, n_cand, steps))
            cand_tokens[:, :, i] = tok  # (B, C, M)
            ends = torch.isin(tok, eos) if eos_ids else torch.zeros_like(tok, dtype=torch.bool)
            if stops:
                ends |= _stop_hits(cand_tokens[:, :, : i + 1], stops, tokenizer)
            if i == steps - 1:
                ends = torch.ones_like(ends)

            # the next running beams: the N best candidates that did not end
            running = cand_scores + ends.float() * NEG
            keep = torch.topk(running, k, dim=-1).indices  # (B, N)
            run_tokens = cand_tokens.gather(1, keep[..., None].expand(b, k, steps))
            run_scores = running.gather(1, keep)
            run_src = src.gather(1, keep)  # (B, N)

            # finished hypotheses: merge the ending top-N candidates into the N best so far
            full = fin_flag.all(dim=1, keepdim=True) & (early is True)
            new = ends & top_rank
            penalised = cand_scores / float(i + 1) ** alpha
            penalised = penalised + full.float() * NEG + (~improvable[:, None]).float() * NEG
            penalised = penalised + (~new).float() * NEG
            best = torch.topk(torch.cat([fin_scores, penalised], 1), k, dim=-1).indices
            fin_scores = torch.cat([fin_scores, penalised], 1).gather(1, best)
            fin_flag = torch.cat([fin_flag, new], 1).gather(1, best)
            lengths = torch.cat([fin_len, torch.full_like(cand, i + 1)], 1)
            fin_len = lengths.gather(1, best)
            merged = torch.cat([fin_tokens, cand_tokens], 1)
            fin_tokens = merged.gather(1, best[..., None].expand(b, k, steps))

            if i == steps - 1 or bool(ends.all()):
                break
            improvable &= _can_improve(run_scores, fin_scores, fin_flag, i + 1, config)
            if not bool(improvable.any()) or (early is True and bool(fin_flag.all())):
                break
            if i == 0:
                session.expand(k)
            session.reorder((rows + run_src).flatten())
            logits = session.step(run_tokens[:, :, i].flatten())  # (B·N, N_V)

    return _best(fin_tokens, fin_scores, fin_len, eos_ids, stops, tokenizer)


def _can_improve(
    run_scores: Tensor, fin_scores: Tensor, fin_flag: Tensor, n: int, config: GenerationConfig
) -> Tensor:
    """(B,) whether the best running beam could still beat the worst finished hypothesis."""
    alpha = config.length_penalty
    if config.early_stopping == "never" and alpha > 0:
        n = config.max_new_tokens  # the best it could do: grow to the longest length
    best_running = run_scores[:, :1] / float(n) ** alpha  # (B, 1)
    worst = torch.where(fin_flag, fin_scores.min(dim=1, keepdim=True).values, NEG)  # (B, N)
    return (best_running > worst).any(dim=1)


def _stop_hits(tokens: Tensor, stops: tuple[str, ...], tokenizer) -> Tensor:
    """(B, C, n) candidate token sequences -> (B, C) whether their text holds a stop string."""
    b, c, _ = tokens.shape
    hits = [
        find_stop(tokenizer.decode(seq, skip_special=True), stops) >= 0
        for seq in tokens.reshape(b * c, -1).tolist()
    ]
    return torch.tensor(hits, device=tokens.device).view(b, c)


def _best(
    fin_tokens: Tensor,
    fin_scores: Tensor,
    fin_len: Tensor,
    eos_ids: tuple[int, ...],
    stops: tuple[str, ...],
    tokenizer,
) -> BeamResult:
    tokens, reasons = [], []
    for seq, n in zip(fin_tokens[:, 0].tolist(), fin_len[:, 0].tolist(), strict=True):
        seq = seq[:n]
        tokens.append(seq)
        if seq and seq[-1] in eos_ids:
            reasons.append("eos")
        elif stops and find_stop(tokenizer.decode(seq, skip_special=True), stops) >= 0:
            reasons.append("stop_string")
        else:
            reasons.append("length")
    return BeamResult(tokens=tokens, scores=fin_scores[:, 0].clone(), reasons=reasons)
