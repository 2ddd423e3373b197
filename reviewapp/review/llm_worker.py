"""Judging LLM lenses without a worker slot waiting on a model.

Design (see README, "What happens to a submission"):

- A proposal with LLM lenses goes to the ``llm`` queue as one
  ``judge_llm_lenses`` task. The LLM worker consumes that queue with Celery's
  ``threads`` pool and a large concurrency: its threads do no I/O of their
  own, they hand the proposal to this process's one event loop and wait.
- On the loop every LLM lens of every proposal in the process is judged at
  once, on one ``httpx.AsyncClient`` per endpoint (built once per process,
  not per call), each call taking a slot of its endpoint's shared limit
  (``endpoint_limits``) only while its HTTP exchange runs. A 429 or a 5xx
  gives the slot back and the retry is deferred on the loop, not slept.
- Database access goes through one thread, so an LLM worker process holds
  one database connection whatever its concurrency.
- The answers go back to the CPU queue as one ``evaluate_proposal`` task,
  which records them under the proposal's lock (exactly once, as before),
  runs the proposal's CPU lenses and the final step.
- The admin's trial of an LLM lens ("try this lens", ``trial.run_llm_trial``)
  is judged here too, on the same clients and gates, its row read and
  written on the same database thread.

While a proposal is on the loop its ``updated_at`` is refreshed, so the
sweeper does not re-enqueue calls that are merely waiting their turn; a
SIGKILLed worker's proposals stop being refreshed and the sweeper sends them
again (the lock keeps a late duplicate answer out).
"""

import asyncio
import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import httpx
from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from reviewapp.core.cite import (
    AnswerBodyAnchor,
    GroundedClaim,
    GroundingPolicy,
    ThoughtWindowAnchor,
    UnresolvedCite,
)
from reviewapp.core.judging import JudgeOutcome, LensFailed
from reviewapp.core.llm_calls import AsyncChatTransport, EndpointGate, run_judge_async

from . import llm_keys
from .endpoint_limits import LEASE_GRACE_SECONDS, DatabaseLimits, endpoint_key, shared_limits
from .models import Lens, Proposal
from .services.judgements import answered_lens_ids
from .services.proposals import proposal_begin_evaluation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Job:
    proposal_id: int
    content: str
    thought_process: str
    policy: GroundingPolicy
    lenses: list[Lens]


def _load_job(proposal_id: int) -> _Job | None:
    """The proposal's unanswered LLM lenses, or None if it is gone or final."""
    proposal = (
        Proposal.objects.filter(pk=proposal_id)
        .only("id", "status", "content", "thought_process", "panel_snapshot", "lenses_answered")
        .first()
    )
    if proposal is None or proposal.is_final:
        return None
    snapshot = proposal.panel_snapshot
    answered = answered_lens_ids(proposal_id) if proposal.lenses_answered else set()
    ids = [
        e["id"]
        for e in snapshot["lenses"]
        if e["backend"] == Lens.Backend.LLM and e["id"] not in answered
    ]
    by_id = Lens.objects.in_bulk(ids)
    if proposal.status == Proposal.Status.QUEUED:
        proposal_begin_evaluation(proposal_id=proposal_id)
    return _Job(
        proposal_id=proposal_id,
        content=proposal.content,
        thought_process=proposal.thought_process,
        policy=GroundingPolicy(snapshot["grounding_policy"]),
        lenses=[by_id[i] for i in ids if i in by_id],
    )


def _touch(proposal_ids: list[int]) -> None:
    Proposal.objects.filter(pk__in=proposal_ids).update(updated_at=timezone.now())


def _on_db_thread(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except DatabaseError:
        # A broken connection would fail every later call on this thread.
        connection.close()
        raise


class _Runtime:
    """This process's event loop, its database thread, and its clients and gates."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="llm-loop", daemon=True)
        self._thread.start()
        # One thread, so one database connection for the whole process.
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-db")
        self.limits = shared_limits()
        # Redis calls need no database connection, so they do not queue behind it.
        self._limits_executor = (
            self.db
            if isinstance(self.limits, DatabaseLimits)
            else ThreadPoolExecutor(max_workers=4, thread_name_prefix="llm-limits")
        )
        self.clients: dict[str, httpx.AsyncClient] = {}
        self.gates: dict[tuple[str, int, int, float], EndpointGate] = {}
        self.in_flight: Counter[int] = Counter()
        asyncio.run_coroutine_threadsafe(self._heartbeat(), self.loop)

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def on_db(self, fn, *args, **kwargs):
        return await self.loop.run_in_executor(self.db, partial(_on_db_thread, fn, *args, **kwargs))

    async def _heartbeat(self) -> None:
        every = max(1.0, settings.REVIEWAPP_STUCK_AFTER_SECONDS / 4)
        while True:
            await asyncio.sleep(every)
            ids = [pid for pid, n in self.in_flight.items() if n > 0]
            if ids:
                try:
                    await self.on_db(_touch, ids)
                except Exception:  # the heartbeat must outlive any one failure
                    log.exception("could not refresh proposals in flight")

    def client_for(self, base_url: str) -> httpx.AsyncClient:
        client = self.clients.get(base_url)
        if client is None:
            # No pool cap of its own: the endpoint gate is the limit, and
            # httpx's default of 100 connections would silently be a second one.
            client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=256)
            )
            self.clients[base_url] = client
        return client

    def gate_for(self, lens: Lens) -> EndpointGate:
        endpoint = endpoint_key(lens.base_url)
        lease = lens.timeout_seconds + LEASE_GRACE_SECONDS
        key = (endpoint, lens.max_concurrent_calls, lens.calls_per_minute, lease)
        gate = self.gates.get(key)
        if gate is None:
            limits, executor = self.limits, self._limits_executor

            async def try_acquire():
                return await self.loop.run_in_executor(
                    executor,
                    partial(
                        _on_db_thread,
                        limits.try_acquire,
                        endpoint,
                        max_concurrent=lens.max_concurrent_calls,
                        per_minute=lens.calls_per_minute,
                        lease_seconds=lease,
                    ),
                )

            async def release(token):
                await self.loop.run_in_executor(
                    executor, partial(_on_db_thread, limits.release, endpoint, token)
                )

            gate = self.gates[key] = EndpointGate(try_acquire=try_acquire, release=release)
        return gate

    async def judge(self, proposal_id: int) -> list[dict] | None:
        job = await self.on_db(_load_job, proposal_id)
        if job is None:
            return None
        self.in_flight[proposal_id] += 1
        try:
            return list(await asyncio.gather(*(self._judge_lens(job, lens) for lens in job.lenses)))
        finally:
            self.in_flight[proposal_id] -= 1
            if not self.in_flight[proposal_id]:
                del self.in_flight[proposal_id]

    async def _judge_lens(self, job: _Job, lens: Lens) -> dict:
        try:
            outcome = await self.judge_lens(
                lens,
                content=job.content,
                thought_process=job.thought_process,
                policy=job.policy,
                target_id=str(job.proposal_id),
            )
        except LensFailed as exc:
            log.warning("lens %s failed on proposal %s: %s", lens.name, job.proposal_id, exc)
            return {"lens": lens.pk, "error": str(exc), "attempts": exc.attempts}
        return _answer_json(lens.pk, outcome)

    async def judge_lens(
        self,
        lens: Lens,
        *,
        content: str,
        thought_process: str,
        policy: GroundingPolicy,
        target_id: str,
    ) -> JudgeOutcome:
        """One LLM lens on one text, on this loop's clients and gates; raises LensFailed.

        Proposals and the admin's trials alike (``trial.run_llm_trial``).
        """
        try:
            api_key = llm_keys.read(lens.api_key_env)
        except PermissionError as refused:
            raise LensFailed(str(refused), 0, []) from refused
        transport = AsyncChatTransport(
            client=self.client_for(lens.base_url),
            base_url=lens.base_url,
            model=lens.model,
            api_key=api_key,
            temperature=lens.temperature,
            timeout=lens.timeout_seconds,
            response_format=lens.response_format,
            gate=self.gate_for(lens),
        )
        return await run_judge_async(
            transport=transport,
            time_limit=settings.REVIEWAPP_LLM_LENS_TIME_LIMIT,
            instructions=lens.instructions,
            lens_name=lens.name,
            content=content,
            thought_process=thought_process,
            policy=policy,
            target_id=target_id,
            transport_attempts=settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS,
        )


def _answer_json(lens_id: int, outcome: JudgeOutcome) -> dict:
    """A judgement as the message back to the CPU queue carries it."""
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


def _anchor(data: dict | None) -> AnswerBodyAnchor | ThoughtWindowAnchor | None:
    if data is None:
        return None
    if data["kind"] == ThoughtWindowAnchor.kind:
        return ThoughtWindowAnchor()
    return AnswerBodyAnchor(start_utf16=data["start_utf16"], end_utf16=data["end_utf16"])


def answer_outcome(answer: dict) -> JudgeOutcome | LensFailed:
    """The LLM worker's answer read back: a judgement to record, or the lens's failure."""
    if "error" in answer:
        return LensFailed(answer["error"], answer["attempts"], [])
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


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> _Runtime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime()
        return _runtime


def judge_proposal(proposal_id: int) -> list[dict] | None:
    """Judge the proposal's unanswered LLM lenses; their answers as JSON, or None if final.

    Blocks the calling (pool) thread only; the calls run on the loop with
    every other proposal's.
    """
    return runtime().run(runtime().judge(proposal_id))
