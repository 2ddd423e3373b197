"""Lens backends: each turns (lens, proposal) into a JudgeOutcome or raises LensFailed."""

import json
import threading

import httpx
from django.conf import settings

from reviewapp.core import constraints as core_constraints
from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import (
    FailureKind,
    JudgeOutcome,
    LensFailed,
    OpenAIChatTransport,
    RecordedTransport,
    run_judge,
)

from ..models import Lens, Proposal, RecordedResponse
from . import llm_keys
from .endpoint_policy import refuse_endpoint

# One blocking client per process and endpoint, reused by every call: building
# one per call (it loads the CA bundle even for http://) cost 22.5 ms against
# 0.53 ms. Only in-process runs use it (``run_lens``: tests, drills); the
# pipeline's LLM calls and the admin's trials go through each worker process's
# LLM loop (llm_loop/). In process a transient error is not retried
# (``run_judge`` never waits in the caller's thread).
_clients: dict[str, httpx.Client] = {}
_clients_lock = threading.Lock()


def _client_for(base_url: str) -> httpx.Client:
    with _clients_lock:
        client = _clients.get(base_url)
        if client is None:
            client = _clients[base_url] = httpx.Client()
        return client


def chat_options(lens: Lens) -> dict:
    """What an LLM lens's chat transport takes from it, sync or async; raises LensFailed.

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
    """Judge `proposal` with `lens` here, blocking.

    ``recorded``: the recorded lenses' responses by lens id, when the caller
    fetched several lenses' at once; otherwise they are read here.
    """
    policy = GroundingPolicy(proposal.panel_snapshot["grounding_policy"])
    match lens.backend:
        case Lens.Backend.CONSTRAINTS:
            return _evaluate_mandate(lens, proposal)
        case Lens.Backend.LLM:
            refuse_endpoint(lens.base_url, resolve=True)
            with OpenAIChatTransport(
                **chat_options(lens), client=_client_for(lens.base_url)
            ) as transport:
                return _judge(transport, lens, proposal, policy)
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
            # A replay has no server to wait for: its backoffs are not slept.
            return _judge(
                RecordedTransport(list(responses)), lens, proposal, policy, sleep=_no_wait
            )
    raise LensFailed(
        f"lens {lens.name!r} has backend {lens.backend!r}, which the worker does not run",
        0,
        [],
        kind=FailureKind.MISCONFIGURED,
    )


def _no_wait(seconds: float) -> None:
    return None


def _judge(
    transport, lens: Lens, proposal: Proposal, policy: GroundingPolicy, **options
) -> JudgeOutcome:
    return run_judge(
        transport=transport,
        **options,
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
