"""What passes between a proposal's task and the LLM loop: the job, and its answers as JSON.

The answers are plain JSON (``answer_json``) because they may go onto the
queue as one more task (``hand_back``); ``answer_outcome`` reads them back.
"""

from collections.abc import Callable
from dataclasses import dataclass

from reviewapp.core.cite import (
    AnswerBodyAnchor,
    GroundedClaim,
    GroundingPolicy,
    ThoughtWindowAnchor,
    UnresolvedCite,
)
from reviewapp.core.judging import FailureKind, JudgeOutcome, LensFailed

from ...models import Lens


@dataclass(frozen=True)
class LlmJob:
    """A proposal's LLM lenses to judge, and where their answers go."""

    proposal_id: int
    content: str
    thought_process: str
    policy: GroundingPolicy
    lenses: list[Lens]
    # Both take the proposal's answers as JSON (``answer_json``).
    # Records them here and now: called on the process's main thread between
    # tasks, or on the recorder thread while the main thread is idle.
    finish_here: Callable[[list[dict]], None]
    # Sends them on to be recorded by whichever process is free: called off the loop.
    deliver: Callable[[list[dict]], None]


def answer_json(lens_id: int, outcome: JudgeOutcome) -> dict:
    """A judgement as the task that records it carries it."""
    return {
        "lens": lens_id,
        "verdict": outcome.verdict,
        "rationale": outcome.rationale,
        "claims": [claim.to_dict() for claim in outcome.claims],
        "unresolved": [
            {"cite": u.cite, "assessment": u.assessment, "note": u.note, "claim_id": u.claim_id}
            for u in outcome.unresolved
        ],
        "raw_response": outcome.raw_response,
        "attempts": outcome.transport_calls,
        "requote_rounds": outcome.requote_rounds,
    }


def failure_json(lens_id: int, failed: LensFailed) -> dict:
    """A lens's failure as the task that records it carries it."""
    return {
        "lens": lens_id,
        "error": failed.reason,
        "attempts": failed.attempts,
        "kind": failed.kind.value,
    }


def _anchor(data: dict | None) -> AnswerBodyAnchor | ThoughtWindowAnchor | None:
    if data is None:
        return None
    if data["kind"] == ThoughtWindowAnchor.kind:
        return ThoughtWindowAnchor()
    return AnswerBodyAnchor(start_utf16=data["start_utf16"], end_utf16=data["end_utf16"])


def answer_outcome(answer: dict) -> JudgeOutcome | LensFailed:
    """An answer read back from its task: a judgement to record, or the lens's failure."""
    if "error" in answer:
        # An answer queued by a release before kinds: its failure was the transport's.
        kind = FailureKind(answer.get("kind", FailureKind.TRANSPORT_ERROR))
        return LensFailed(answer["error"], answer["attempts"], [], kind=kind)
    return JudgeOutcome(
        verdict=answer["verdict"],
        rationale=answer["rationale"],
        claims=[
            GroundedClaim(
                cite=c["cite"],
                text=c["text"],
                claim_id=c["claim_id"],
                assessment=c["assessment"],
                note=c["note"],
                anchor=_anchor(c.get("anchor")),
            )
            for c in answer["claims"]
        ],
        unresolved_cites=[u["cite"] for u in answer["unresolved"]],
        raw_response=answer["raw_response"],
        transport_calls=answer["attempts"],
        repair_asks=0,
        requote_rounds=answer["requote_rounds"],
        transcript=[],
        unresolved=tuple(UnresolvedCite(target_id="", **u) for u in answer["unresolved"]),
    )
