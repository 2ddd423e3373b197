"""The judge loop shared by the ``llm`` and ``recorded`` backends.

One lens judges one proposal: we ask a chat model for a JSON judgement, parse
it defensively, ground every claim's cite against the proposal, and re-ask
when the answer is unusable. Three budgets bound the loop and never borrow
from each other:

- transport: ``transport_attempts`` calls for the whole run, spent by the
  first call and by every retry after a transient error (a 429 spends none:
  a busy provider is waited out, up to the caller's deadline);
- repair: one re-ask after a malformed answer;
- re-quote: ``REQUOTE_BUDGET`` re-asks for cites that did not ground (REJECT
  policy only).

A repair or re-quote re-ask pays for its own call, so grounding trouble can
never exhaust the retries meant for a flaky network, and the reverse.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reviewapp.core.cite import (
    REQUOTE_BUDGET,
    GroundedClaim,
    GroundingPolicy,
    UnresolvedCite,
    ground_claims,
)
from reviewapp.core.judging.answer import MalformedJudgement, parse_judgement
from reviewapp.core.judging.prompt import _repair_request, _requote_request, build_messages
from reviewapp.core.judging.transport import (
    ChatTransport,
    EndpointRefused,
    PermanentTransportError,
    RateLimited,
    TransientTransportError,
    TransportError,
    UnusableCompletion,
)


class FailureKind(StrEnum):
    """Why a lens gave no judgement, as a closed set a machine can branch on."""

    # Its time limit (or the worker's) ran out before it answered.
    TIMEOUT = "timeout"
    # The provider answered 429 until the lens's time limit.
    RATE_LIMITED = "rate_limited"
    # Connection errors, timeouts of single calls or 5xx used up its attempts.
    TRANSPORT_ERROR = "transport_error"
    # The provider refused the request for good (4xx other than 429) or answered unreadably.
    HTTP_ERROR = "http_error"
    # The model answered, but with no judgement to read (malformed after repair, refusal, cut off).
    INVALID_ANSWER = "invalid_answer"
    # The lens cannot run as configured (key variable refused, mandate refused, no recording).
    MISCONFIGURED = "misconfigured"
    # A constraints lens's clause could not be evaluated on this text.
    UNDECIDABLE = "undecidable"
    # An external lens sent no judgement before the panel's deadline.
    DEADLINE = "deadline"
    # The lens was deleted after the submission, so it never ran (no failure row exists).
    DELETED = "deleted"
    # The call raised an error none of the above covers; the message names it.
    INTERNAL_ERROR = "internal_error"


class LensFailed(Exception):
    """The lens could not produce a judgement within its budgets."""

    def __init__(self, reason: str, attempts: int, transcript: list[dict], *, kind: FailureKind):
        super().__init__(f"{reason} (after {attempts} transport calls)")
        self.reason = reason
        self.attempts = attempts
        self.transcript = transcript
        self.kind = kind


@dataclass
class JudgeOutcome:
    verdict: str
    rationale: str
    claims: list[GroundedClaim]
    # Cites that never grounded: dropped after the re-quote budget under REJECT,
    # kept unanchored in `claims` under REPAIR. Recorded either way.
    unresolved_cites: list[str]
    raw_response: str
    transport_calls: int
    repair_asks: int
    requote_rounds: int
    transcript: list[dict]
    # The same misses with the lens's own assessment and note, for the record.
    unresolved: tuple[UnresolvedCite, ...] = ()


@dataclass(frozen=True)
class Backoff:
    """A step of the loop: wait this long before the next call (a transient error)."""

    seconds: float


@dataclass
class _Caller:
    """Asks for calls, retrying transient errors on the run-wide budget.

    A generator: it yields the messages to send and is sent the answer text,
    or has the transport's error thrown in; before a retry it yields a
    ``Backoff``. The loop does no I/O itself, so the same budgets drive a
    blocking transport (``run_judge``) and an async one that defers a retry
    instead of sleeping (``reviewapp.core.llm_calls``).
    """

    budget: int
    backoff_base: float
    backoff_cap: float
    rng: Callable[[], float]
    transcript: list[dict]
    calls: int = 0

    def call(self, messages: list[dict], *, prepaid: bool):
        """``prepaid``: the first attempt is funded by a re-ask budget, not ours."""
        failures = refusals = 0
        while True:
            # judge_steps guarantees budget >= 1 on entry, and a retry is only
            # taken while budget remains.
            if not prepaid:
                self.budget -= 1
            self.calls += 1
            try:
                return (yield messages)
            except RateLimited as exc:
                # The same call again, funded as this one was: a 429 is a busy
                # provider, and the attempts are for broken networks and 5xx.
                if not prepaid:
                    self.budget += 1
                yield Backoff(self._delay(refusals, exc.retry_after))
                refusals += 1
                continue
            except UnusableCompletion as exc:
                raise LensFailed(
                    str(exc), self.calls, self.transcript, kind=FailureKind.INVALID_ANSWER
                ) from exc
            except PermanentTransportError as exc:
                refused = isinstance(exc, EndpointRefused)  # an address it may not call
                raise LensFailed(
                    f"{'refused to call the endpoint' if refused else 'permanent transport error'}"
                    f": {exc}",
                    self.calls,
                    self.transcript,
                    kind=FailureKind.MISCONFIGURED if refused else FailureKind.HTTP_ERROR,
                ) from exc
            except TransientTransportError as exc:
                prepaid = False
                if self.budget <= 0:
                    raise LensFailed(
                        f"transport budget exhausted: {exc}",
                        self.calls,
                        self.transcript,
                        kind=FailureKind.TRANSPORT_ERROR,
                    ) from exc
                yield Backoff(self._delay(failures, exc.retry_after))
                failures += 1

    def _delay(self, failures: int, retry_after: float | None) -> float:
        # Full jitter spreads retries from parallel lenses; a server's
        # Retry-After is honoured, but never beyond the cap, so no wait is unbounded.
        jittered = self.rng() * min(self.backoff_cap, self.backoff_base * 2**failures)
        if retry_after is not None:
            return min(self.backoff_cap, max(retry_after, jittered))
        return jittered


def _no_wait(seconds: float) -> None:
    return None


def run_judge(
    *,
    transport: ChatTransport,
    sleep: Callable[[float], Any] = _no_wait,
    **loop: Any,
) -> JudgeOutcome:
    """Judge through a blocking transport; ``loop`` is ``judge_steps``'s arguments.

    The blocking transport is a replay's (``RecordedTransport``), which has no
    server to wait for: each backoff goes to ``sleep``, which returns at once
    unless a test records the delays. Live LLM calls go through
    ``llm_calls.run_judge_async`` on the worker's event loop, which defers
    each retry there instead of holding a thread.
    """
    steps = judge_steps(**loop)
    reply: str | None = None
    error: TransportError | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(reply)
        except StopIteration as done:
            return done.value
        reply = error = None
        if isinstance(step, Backoff):
            sleep(step.seconds)
            continue
        try:
            reply = transport.complete(step)
        except TransportError as exc:
            error = exc


def judge_steps(
    *,
    instructions: str,
    lens_name: str,
    content: str,
    thought_process: str,
    policy: GroundingPolicy,
    target_id: str,
    round: int = 1,
    transport_attempts: int = 4,
    backoff_base: float = 0.5,
    backoff_cap: float = 8.0,
    rng: Callable[[], float] = random.random,
) -> Generator[list[dict] | Backoff, str, JudgeOutcome]:
    """The judge loop as steps: yields messages to send (or a Backoff), returns the outcome.

    Longer than most, on purpose: one generator read top to bottom, whose state
    is its budgets (the transport's, one repair, the requote rounds) and the
    growing transcript; split, the pieces would hand all of it back and forth
    through ``yield from``. ``_Caller`` already holds the transport's part.
    """
    if transport_attempts < 1:
        raise ValueError("transport_attempts must be at least 1")
    messages = build_messages(
        instructions=instructions,
        lens_name=lens_name,
        content=content,
        thought_process=thought_process,
    )
    caller = _Caller(transport_attempts, backoff_base, backoff_cap, rng, transcript=messages)
    repair_asks = 0
    requote_rounds = 0
    prepaid = False
    while True:
        raw = yield from caller.call(messages, prepaid=prepaid)
        try:
            parsed = parse_judgement(raw)
        except MalformedJudgement as exc:
            if repair_asks >= 1:
                messages.append({"role": "assistant", "content": raw})
                raise LensFailed(
                    f"malformed judgement after repair: {exc.reason}",
                    caller.calls,
                    messages,
                    kind=FailureKind.INVALID_ANSWER,
                ) from exc
            repair_asks += 1
            messages += [{"role": "assistant", "content": raw}, _repair_request(exc.reason)]
            prepaid = True
            continue

        grounding = ground_claims(
            content=content,
            thought_process=thought_process,
            claims=parsed.claims,
            target_id=target_id,
            round=round,
            policy=policy,
        )
        unresolved = [item.cite for item in grounding.unresolved]
        if unresolved and policy == GroundingPolicy.REJECT and requote_rounds < REQUOTE_BUDGET:
            requote_rounds += 1
            messages += [{"role": "assistant", "content": raw}, _requote_request(unresolved)]
            prepaid = True
            continue

        messages.append({"role": "assistant", "content": raw})
        return JudgeOutcome(
            verdict=parsed.verdict,
            rationale=parsed.rationale,
            claims=grounding.claims,
            unresolved_cites=unresolved,
            raw_response=raw,
            transport_calls=caller.calls,
            repair_asks=repair_asks,
            requote_rounds=requote_rounds,
            transcript=messages,
            unresolved=tuple(grounding.unresolved),
        )
