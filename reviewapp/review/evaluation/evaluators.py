"""Lens backends run in process: each turns (lens, proposal) into a JudgeOutcome or raises
LensFailed. LLM lenses are not judged here but on each worker process's LLM loop
(``llm_loop``), which takes their chat options from ``chat_options``."""

import json

from django.conf import settings

from reviewapp.core import constraints as core_constraints
from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import (
    FailureKind,
    JudgeOutcome,
    LensFailed,
    RecordedTransport,
    run_judge,
)

from ..models import Lens, Proposal, RecordedResponse
from . import llm_keys


def chat_options(lens: Lens) -> dict:
    """What an LLM lens's chat transport takes from it; raises LensFailed.

    Its API key is read from the environment variable it names, if the
    server allows that variable (``llm_keys``).
    """
    try:
        api_key = llm_keys.read(lens.api_key_env)
    except PermissionError as refused:
        raise LensFailed(str(refused), 0, [], kind=FailureKind.MISCONFIGURED) from refused
    return {
        "base_url": lens.base_url,
        "model": lens.model,
        "api_key": api_key,
        "temperature": lens.temperature,
        "timeout": lens.timeout_seconds,
        "response_format": lens.response_format,
    }


def evaluate_lens(
    *, lens: Lens, proposal: Proposal, recorded: dict[int, list] | None = None
) -> JudgeOutcome:
    """Judge `proposal` with a CPU lens (constraints, recorded) here, at once.

    ``recorded``: the recorded lenses' responses by lens id, when the caller
    fetched several lenses' at once; otherwise they are read here.
    """
    policy = GroundingPolicy(proposal.panel_snapshot["grounding_policy"])
    match lens.backend:
        case Lens.Backend.CONSTRAINTS:
            return _evaluate_mandate(lens, proposal)
        case Lens.Backend.LLM:
            # A worker slot never waits on a model: only the LLM loop calls one.
            raise LensFailed(
                f"lens {lens.name!r} is an LLM lens: it is judged on the worker's LLM loop, "
                "not in process",
                0,
                [],
                kind=FailureKind.MISCONFIGURED,
            )
        case Lens.Backend.RECORDED:
            if recorded is None:
                row = RecordedResponse.objects.filter(
                    lens=lens, content_sha256=proposal.content_sha256
                ).first()
                responses = row.responses if row is not None else None
            else:
                responses = recorded.get(lens.pk)
            if responses is None:
                raise LensFailed(
                    f"no recorded response for lens {lens.name!r} and this content",
                    0,
                    [],
                    kind=FailureKind.MISCONFIGURED,
                )
            # A replay has no server to wait for: its backoffs are not slept (run_judge).
            return _judge(RecordedTransport(list(responses)), lens, proposal, policy)
    raise LensFailed(
        f"lens {lens.name!r} has backend {lens.backend!r}, which the worker does not run",
        0,
        [],
        kind=FailureKind.MISCONFIGURED,
    )


def _judge(transport, lens: Lens, proposal: Proposal, policy: GroundingPolicy) -> JudgeOutcome:
    return run_judge(
        transport=transport,
        instructions=lens.instructions,
        lens_name=lens.name,
        content=proposal.content,
        thought_process=proposal.thought_process,
        policy=policy,
        target_id=str(proposal.pk),
        transport_attempts=settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS,
    )


def _evaluate_mandate(lens: Lens, proposal: Proposal) -> JudgeOutcome:
    try:
        mandate = core_constraints.ConstraintSet.from_text(lens.mandate)
    except core_constraints.ConstraintError as exc:
        raise LensFailed(f"mandate refused: {exc}", 0, [], kind=FailureKind.MISCONFIGURED) from exc
    verdict = mandate.evaluate(proposal.content)
    if verdict.undecided:
        # A clause that could not be evaluated is no judgement at all.
        raise LensFailed(
            "could not evaluate: " + "; ".join(v.detail for v in verdict.undecided),
            0,
            [],
            kind=FailureKind.UNDECIDABLE,
        )
    lines = verdict.feedback() if not verdict.is_satisfied else []
    rationale = (
        "Every checkable constraint holds."
        if verdict.is_satisfied
        else "Violated:\n" + "\n".join(f"- {line}" for line in lines)
    )
    if mandate.unenforced:
        rationale += "\nUnenforced (could not be checked): " + "; ".join(mandate.unenforced)
    record = {
        "csr": verdict.csr,
        "error": verdict.error,
        "satisfied": [c.clause for c in verdict.satisfied],
        "violations": lines,
        "unenforced": list(mandate.unenforced),
    }
    return JudgeOutcome(
        verdict="pass" if verdict.is_satisfied else "fail",
        rationale=rationale,
        claims=[],
        unresolved_cites=[],
        raw_response=json.dumps(record, ensure_ascii=False),
        transport_calls=0,
        repair_asks=0,
        requote_rounds=0,
        transcript=[],
    )
