"""Reading a model's answer: the judgement object out of whatever text surrounds it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from reviewapp.core.cite import ClaimInput
from reviewapp.core.judging.prompt import ASSESSMENTS, VERDICTS


class MalformedJudgement(ValueError):
    """The model's answer is not a valid judgement; ``reason`` is sent back to it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ParsedJudgement:
    verdict: str
    rationale: str
    claims: list[ClaimInput]


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def _first_object(text: str) -> dict:
    # Fenced blocks first, so a stray object in the prose cannot win; then the
    # whole text. raw_decode at each "{" copes with braces inside strings,
    # which brace counting does not.
    decoder = json.JSONDecoder()
    for candidate in [*_FENCE.findall(text), text]:
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise MalformedJudgement("no JSON object found in the answer")


_THINK_OPEN = re.compile(r"\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)


def answer_after_reasoning(text: str) -> str:
    """The part of a reasoning model's content that is its answer.

    DeepSeek-R1, Qwen3 and others served through OpenAI-compatible endpoints
    (vLLM, Ollama, llama.cpp) put their reasoning in the content as
    ``<think>…</think>`` before the answer; some chat templates open the block
    in the prompt, so only the closing tag arrives. A draft judgement inside the
    reasoning must never be read as the verdict, so the reasoning block is cut
    off whole, and reasoning that never closed holds no answer at all.
    """
    opened = _THINK_OPEN.match(text)
    closed = _THINK_CLOSE.search(text, opened.end() if opened else 0)
    if closed:
        return text[closed.end() :]
    if opened:
        raise MalformedJudgement(
            "the answer is all reasoning: <think> was never closed, so no judgement follows it"
        )
    return text


def parse_judgement(text: str) -> ParsedJudgement:
    data = _first_object(answer_after_reasoning(text))

    verdict = data.get("verdict")
    if not isinstance(verdict, str) or verdict.strip().lower() not in VERDICTS:
        raise MalformedJudgement(f'"verdict" must be "pass" or "fail", got {verdict!r}')
    rationale = data.get("rationale")
    if not isinstance(rationale, str):
        raise MalformedJudgement('"rationale" must be a string')
    raw_claims = data.get("claims")
    if not isinstance(raw_claims, list):
        raise MalformedJudgement('"claims" must be a list (use [] for none)')

    claims = []
    for index, item in enumerate(raw_claims):
        where = f"claims[{index}]"
        if not isinstance(item, dict):
            raise MalformedJudgement(f"{where} must be an object")
        cite = item.get("cite", "")
        claim_id = item.get("claim_id")
        if claim_id is not None and not isinstance(claim_id, str):
            raise MalformedJudgement(f'{where}."claim_id" must be a string when given')
        if not isinstance(cite, str):
            raise MalformedJudgement(f'{where}."cite" must be a string')
        # A blank cite is a back-reference to an earlier claim, so needs its id.
        if not cite.strip() and not (claim_id and claim_id.strip()):
            raise MalformedJudgement(f'{where}."cite" must quote the proposal')
        assessment = item.get("assessment", "verified")
        if not isinstance(assessment, str) or assessment.strip().lower() not in ASSESSMENTS:
            raise MalformedJudgement(
                f'{where}."assessment" must be one of {", ".join(ASSESSMENTS)}, got {assessment!r}'
            )
        note = item.get("note", "")
        if not isinstance(note, str):
            raise MalformedJudgement(f'{where}."note" must be a string')
        claims.append(
            ClaimInput(
                cite=cite,
                assessment=assessment.strip().lower(),
                note=note,
                claim_id=claim_id or None,
            )
        )
    return ParsedJudgement(verdict=verdict.strip().lower(), rationale=rationale, claims=claims)
