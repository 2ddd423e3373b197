"""The client without I/O: builds each request, decides whether to retry and how long
to wait, and turns answers into models or errors. `Client` and `AsyncClient` only
send what this builds and sleep what it says, so both behave exactly alike."""

from __future__ import annotations

import calendar
import email.utils
import json
import math
import operator
import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    ReviewappError,
    WaitTimeout,
    status_error_class,
)
from .guarantee import Guarantee
from .models import (
    FINAL,
    Decision,
    Escalation,
    Judgement,
    Page,
    Panel,
    Proposal,
    ProposalSummary,
    ReviewStatus,
    ShapeError,
    Submitted,
    Webhook,
    items,
    obj,
    req,
)

T = TypeVar("T")

VERSION = "0.1.0"  # as in clients/python/pyproject.toml
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
# Only the shape of these is checked: the server may add statuses.
STATUSES = ("queued", "evaluating", *FINAL)


@dataclass(frozen=True)
class Answer:
    """What came back, as a driver read it."""

    status: int
    headers: Mapping[str, str]  # case-insensitive (httpx.Headers)
    body: bytes


@dataclass(frozen=True)
class Request(Generic[T]):  # noqa: UP046 (the client runs on Python 3.10)
    method: str
    path: str
    parse: Callable[[Answer], T]
    # Safe to send twice: a GET, a DELETE, or a submission deduplicated by external_ref.
    idempotent: bool
    params: Mapping[str, Any] | None = None
    json: Any = None


@dataclass(frozen=True)
class Retry:
    delay: float  # seconds to sleep before the next attempt


class Deadline:
    """The end of a call's time budget, on the monotonic clock."""

    def __init__(self, seconds: float):
        if not seconds > 0:  # also refuses nan
            raise ValueError(f"a timeout must be a positive number of seconds, not {seconds!r}")
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """How long a `Retry-After` header asks to wait (RFC 9110 §10.2.3): delay-seconds or
    an HTTP-date. None for anything else (`nan`, `inf`, `-5`, `1.5`, junk): the caller
    then backs off on its own. A valid but absurdly long delay is `math.inf`."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value) if len(value) <= 12 else math.inf
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    now = time.time() if now is None else now
    # utctimetuple() reads a naive date ("-0000") as UTC, as an HTTP-date always is.
    return max(0.0, calendar.timegm(date.utctimetuple()) - now)


def _positive(name: str, value: float) -> float:
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{name} must be a positive, finite number of seconds, not {value!r}")
    return float(value)


class Core:
    """Everything `Client` and `AsyncClient` share."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float,
        max_retries: int,
        max_retry_wait: float,
        backoff: float = 0.5,
        rng: random.Random | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.headers = {
            "Authorization": f"Bearer {token}",
            "User-Agent": f"reviewapp-client/{VERSION}",
            "Accept": "application/json",
        }
        self.timeout = _positive("timeout", timeout)
        self.max_retries = operator.index(max_retries)
        self.max_retry_wait = _positive("max_retry_wait", max_retry_wait)
        self.backoff = _positive("backoff", backoff)
        self.rng = rng or random.Random()
        self.heard = Heard()

    # ── one call: attempts, retries, answers ────────────────────────────────

    def wait_plan(self, proposal_id: int, **options: Any) -> WaitPlan:
        return WaitPlan(self, _id(proposal_id), **options)

    def deadline(self, timeout: float | None) -> Deadline:
        return Deadline(self.timeout if timeout is None else timeout)

    def attempt_timeout(self, deadline: Deadline) -> httpx.Timeout:
        """The next attempt's share of the call's budget: all that is left of it."""
        remaining = deadline.remaining()
        if remaining <= 0:
            raise APITimeoutError("the call's timeout ran out before another attempt")
        return httpx.Timeout(remaining)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before retry number `attempt + 1`: what the server asked, spread a
        little so its clients do not all return at once, or else full-jitter backoff."""
        if retry_after is not None:
            return retry_after + self.rng.uniform(0, min(1.0, retry_after / 10))
        return self.rng.uniform(0, min(self.max_retry_wait, self.backoff * 2**attempt))

    def _retry_or_raise(
        self,
        request: Request,
        attempt: int,
        deadline: Deadline,
        error: ReviewappError,
        *,
        safe: bool,
        retry_after: float | None = None,
    ) -> Retry:
        if not safe or attempt >= self.max_retries:
            raise error
        delay = self.delay(attempt, retry_after)
        # A wait past the cap or past the caller's timeout would only end in this
        # same error, later: raise it now.
        if delay > self.max_retry_wait or delay >= deadline.remaining():
            raise error
        return Retry(delay)

    def after_failure(
        self, request: Request, attempt: int, deadline: Deadline, exc: httpx.HTTPError
    ) -> Retry:
        """No answer: retry if repeating is safe, else raise a ReviewappError."""
        message = f"{request.method} {request.path}: {type(exc).__name__}: {exc}"
        timed_out = isinstance(exc, httpx.TimeoutException)
        error = (APITimeoutError if timed_out else APIConnectionError)(message)
        error.__cause__ = exc
        # A connection that never opened carried nothing, so any request may be repeated.
        never_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
        return self._retry_or_raise(
            request, attempt, deadline, error, safe=request.idempotent or never_sent
        )

    def after_response(
        self, request: Request[T], attempt: int, deadline: Deadline, answer: Answer
    ) -> T | Retry:
        """The parsed answer, a Retry, or the error the answer means."""
        if 200 <= answer.status < 300:
            try:
                return request.parse(answer)
            except ShapeError as exc:
                message = f"{request.method} {request.path}: {exc}"
                raise APIResponseValidationError(
                    message, status=answer.status, body=answer.body
                ) from exc
        retry_after = retry_after_seconds(answer.headers.get("Retry-After"))
        error = status_error_class(answer.status)(
            answer.status,
            _detail(answer),
            headers=answer.headers,
            retry_after=retry_after,
        )
        if answer.status not in RETRYABLE_STATUSES:
            raise error
        return self._retry_or_raise(
            request, attempt, deadline, error, safe=request.idempotent, retry_after=retry_after
        )

    # ── requests ────────────────────────────────────────────────────────────

    def submit(
        self,
        *,
        panel: str,
        content: str,
        external_ref: str,
        thought_process: str,
        title: str,
        metadata: Mapping[str, Any] | None,
    ) -> Request[Submitted]:
        body = {
            "panel": panel,
            "content": content,
            "external_ref": external_ref,
            "thought_process": thought_process,
            "title": title,
            "metadata": dict(metadata or {}),
        }
        return Request(
            "POST",
            "/api/proposals",
            lambda a: Submitted.from_api(_object(a), created=a.status == 202),
            idempotent=True,  # the server stores one proposal per external_ref
            json=body,
        )

    def get_proposal(self, proposal_id: int) -> Request[Proposal]:
        path = f"/api/proposals/{_id(proposal_id)}"
        return Request("GET", path, lambda a: Proposal.from_api(_object(a)), idempotent=True)

    def list_proposals(
        self, *, status: str | None, panel: str | None, page_size: int, cursor: str | None
    ) -> Request[Page[ProposalSummary]]:
        params = _params(status=status, panel=panel, cursor=cursor, limit=page_size)
        return Request(
            "GET",
            "/api/proposals",
            lambda a: _page(a, ProposalSummary.from_api, "next_cursor", str),
            idempotent=True,
            params=params,
        )

    def judge(
        self,
        proposal_id: int,
        *,
        lens: str,
        verdict: str,
        rationale: str,
        claims: Iterable[Mapping[str, str]],
    ) -> Request[Judgement]:
        body = {"lens": lens, "verdict": verdict, "rationale": rationale, "claims": list(claims)}
        return Request(
            "POST",
            f"/api/proposals/{_id(proposal_id)}/judgements",
            lambda a: Judgement.from_api(_object(a)),
            idempotent=False,  # a repeat is a 409
            json=body,
        )

    def list_escalations(
        self, *, status: str | None, page_size: int, cursor: str | None
    ) -> Request[Page[Escalation]]:
        return Request(
            "GET",
            "/api/escalations",
            lambda a: _page(a, Escalation.from_api, "next_cursor", str),
            idempotent=True,
            params=_params(status=status, cursor=cursor, limit=page_size),
        )

    def get_escalation(self, escalation_id: int) -> Request[Escalation]:
        path = f"/api/escalations/{_id(escalation_id)}"
        return Request("GET", path, lambda a: Escalation.from_api(_object(a)), idempotent=True)

    def decide(
        self,
        escalation_id: int,
        *,
        outcome: str,
        rationale: str,
        claims: Mapping[int, str] | None = None,
        tags: list[str] | None = None,
        wrong_reason: list[str] | None = None,
    ) -> Request[Decision | ReviewStatus]:
        body: dict[str, Any] = {"outcome": outcome, "rationale": rationale}
        if claims:
            body["claims"] = [{"claim": c, "mark": m} for c, m in claims.items()]
        if tags:
            body["tags"] = list(tags)
        if wrong_reason:
            body["wrong_reason"] = list(wrong_reason)
        return Request(
            "POST",
            f"/api/escalations/{_id(escalation_id)}/decision",
            # 202: one of several reviews, deciding nothing yet; 201: the decision.
            lambda a: (
                ReviewStatus.from_api(_object(a))
                if "status" in _object(a)
                else Decision.from_api(_object(a))
            ),
            idempotent=False,  # a repeat is a 409: the escalation is already decided
            json=body,
        )

    def list_decisions(self, *, after: int, page_size: int) -> Request[Page[Decision]]:
        return Request(
            "GET",
            "/api/decisions",
            lambda a: _page(a, Decision.from_api, "next_after", int),
            idempotent=True,
            params=_params(after=after, limit=page_size),
        )

    def get_decision(self, decision_id: int) -> Request[Decision]:
        path = f"/api/decisions/{_id(decision_id)}"
        return Request("GET", path, lambda a: Decision.from_api(_object(a)), idempotent=True)

    def keys(self) -> Request[dict[str, str]]:
        def parse(answer: Answer) -> dict[str, str]:
            rows = _json(answer)
            if not isinstance(rows, list):
                raise ShapeError(f"keys: expected a list, got {type(rows).__name__}")
            keys = {}
            for i, row in enumerate(rows):
                row = obj(row, f"keys[{i}]")
                keys[req(row, "key_id", str, at=f"keys[{i}]")] = req(
                    row, "public_key", str, at=f"keys[{i}]"
                )
            return keys

        return Request("GET", "/api/keys", parse, idempotent=True)

    def list_panels(self) -> Request[list[Panel]]:
        return Request(
            "GET",
            "/api/panels",
            lambda a: items(_object(a), "items", Panel.from_api, at="panels"),
            idempotent=True,
        )

    def get_guarantee(self, panel: str) -> Request[Guarantee]:
        if not isinstance(panel, str) or not panel:
            raise ValueError(f"a panel is named by a non-empty string, not {panel!r}")
        path = f"/api/panels/{quote(panel, safe='')}/guarantee"
        return Request("GET", path, lambda a: Guarantee.from_api(_object(a)), idempotent=True)

    def list_webhooks(self) -> Request[list[Webhook]]:
        return Request(
            "GET",
            "/api/webhooks",
            lambda a: items(_object(a), "items", Webhook.from_api, at="webhooks"),
            idempotent=True,
        )

    def create_webhook(
        self, *, url: str, events: Iterable[str], description: str
    ) -> Request[Webhook]:
        return Request(
            "POST",
            "/api/webhooks",
            lambda a: Webhook.from_api(_object(a)),
            idempotent=False,  # a repeat registers a second endpoint
            json={"url": url, "events": list(events), "description": description},
        )

    def get_webhook(self, webhook_id: int) -> Request[Webhook]:
        path = f"/api/webhooks/{_id(webhook_id)}"
        return Request("GET", path, lambda a: Webhook.from_api(_object(a)), idempotent=True)

    def delete_webhook(self, webhook_id: int) -> Request[None]:
        path = f"/api/webhooks/{_id(webhook_id)}"
        return Request("DELETE", path, lambda a: None, idempotent=True)

    def test_webhook(self, webhook_id: int) -> Request[str]:
        return Request(
            "POST",
            f"/api/webhooks/{_id(webhook_id)}/test",
            lambda a: req(_object(a), "delivery", str, at="ping"),
            idempotent=False,  # a repeat sends a second ping
        )


class WaitPlan:
    """The decisions of one `wait()`: how long each read may take, whether to stop,
    how long to nap. The drivers read the proposal and nap; this decides."""

    def __init__(
        self,
        core: Core,
        proposal_id: int,
        *,
        until: Iterable[str],
        timeout: float,
        poll: float,
        max_poll: float,
    ):
        self.core = core
        self.proposal_id = proposal_id
        self.wanted = frozenset([until] if isinstance(until, str) else until)
        if not self.wanted:
            raise ValueError("until names no status to wait for")
        self.deadline = Deadline(timeout)
        self.poll = _positive("poll", poll)
        self.max_poll = _positive("max_poll", max_poll)
        self.last: Proposal | None = None

    def read_timeout(self) -> float:
        # At least a sliver: a spent deadline surfaces as APITimeoutError, then WaitTimeout.
        return max(min(self.core.timeout, self.deadline.remaining()), 0.001)

    def after_read(self, proposal: Proposal) -> Proposal | float:
        """The proposal if it is in a wanted status, else seconds to nap."""
        self.last = proposal
        if proposal.status in self.wanted:
            return proposal
        return self._nap(self.poll, None)

    def after_failure(self, error: ReviewappError) -> float:
        """Seconds to nap after a failed read. A lasting error (a 404, a 401) is raised;
        so is a transient one whose Retry-After ends after the wait would."""
        transient = isinstance(error, APIConnectionError) or (
            isinstance(error, APIStatusError) and error.status in RETRYABLE_STATUSES
        )
        retry_after = getattr(error, "retry_after", None)
        if not transient or (retry_after is not None and retry_after >= self.deadline.remaining()):
            raise error
        return self._nap(max(self.poll, retry_after or 0.0), error)

    def _nap(self, pause: float, failure: ReviewappError | None) -> float:
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise WaitTimeout(self.proposal_id, self.last) from failure
        self.poll = min(self.poll * 1.6, self.max_poll)
        return min(pause, remaining)

    def woken(self) -> bool:
        """A webhook said the proposal reached a wanted status: read it now."""
        return self.core.heard.says(self.proposal_id, self.wanted)

    def napped(self) -> None:
        # Consumed: if the read that follows still disagrees, the next nap is a full one.
        self.core.heard.forget(self.proposal_id)


class Heard:
    """Proposal statuses that webhooks reported, for wait() to wake on. Bounded: an
    agent that passes on every event and waits on few must not grow without end."""

    LIMIT = 10_000

    def __init__(self):
        self._status: OrderedDict[int, str] = OrderedDict()

    def record(self, event: Mapping[str, Any]) -> int | None:
        """The proposal id a webhook event is about, if any; remembers its status."""
        data = event.get("data") if isinstance(event, Mapping) else None
        proposal = data.get("proposal") if isinstance(data, Mapping) else None
        if not isinstance(proposal, Mapping) or not isinstance(proposal.get("id"), int):
            return None
        self._status[proposal["id"]] = str(proposal.get("status", ""))
        self._status.move_to_end(proposal["id"])
        while len(self._status) > self.LIMIT:
            self._status.popitem(last=False)
        return proposal["id"]

    def says(self, proposal_id: int, wanted: frozenset[str]) -> bool:
        return self._status.get(proposal_id) in wanted

    def forget(self, proposal_id: int) -> None:
        self._status.pop(proposal_id, None)


def _id(value: int) -> int:
    # An id goes into the path: only an int may, never a string such as "1/../keys".
    if isinstance(value, bool):
        raise TypeError("an id is an int, not a bool")
    return operator.index(value)


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _json(answer: Answer) -> Any:
    try:
        return json.loads(answer.body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        kind = "nested too deeply" if isinstance(exc, RecursionError) else "not JSON"
        raise ShapeError(f"the answer is {kind}") from exc


def _object(answer: Answer) -> Mapping[str, Any]:
    return obj(_json(answer), "answer")


def _page(answer: Answer, parse, next_key: str, next_type: type) -> Page:
    data = _object(answer)
    return Page(
        items=items(data, "items", parse, at="page"),
        next=req(data, next_key, next_type, type(None), at="page"),
    )


def _detail(answer: Answer) -> Any:
    """The API's `{"detail"}` (a string, or a 422's list of errors), else the body's text."""
    try:
        detail = json.loads(answer.body).get("detail")
    except (ValueError, RecursionError, AttributeError):
        detail = None
    if isinstance(detail, str) or (
        isinstance(detail, list) and all(isinstance(d, dict) for d in detail)
    ):
        return detail
    return answer.body[:1000].decode("utf-8", "replace") or f"HTTP {answer.status}"
