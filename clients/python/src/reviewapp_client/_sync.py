"""`Client`: the blocking driver of the shared core (`_base.Core`), over httpx.Client."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import httpx

from ._base import Answer, Core, Request, Retry
from .errors import ReviewappError
from .guarantee import Guarantee
from .models import (
    FINAL,
    Decision,
    Escalation,
    Judgement,
    Panel,
    Proposal,
    ProposalSummary,
    ReviewStatus,
    Submitted,
    Webhook,
)
from .pagination import SyncPager

T = TypeVar("T")


class Client:
    """`Client(base_url, token)`; one instance is safe to share between threads.

    `timeout` is each call's whole budget in seconds, its retries and the waits
    between them included; every method takes its own `timeout=` too. Transient
    failures (429, 502, 503, 504, a lost connection) are retried up to
    `max_retries` times where repeating is safe, each wait at most
    `max_retry_wait` seconds and never past the call's timeout.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        rng: random.Random | None = None,
    ):
        self._core = Core(
            base_url,
            token,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            rng=rng,
        )
        self._http = httpx.Client(
            base_url=self._core.base_url, headers=self._core.headers, transport=transport
        )
        self._news = threading.Condition()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, request: Request[T], timeout: float | None) -> T:
        core = self._core
        deadline = core.deadline(timeout)
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    json=request.json,
                    timeout=core.attempt_timeout(deadline),
                )
            except httpx.HTTPError as exc:
                outcome = core.after_failure(request, attempt, deadline, exc)
            else:
                answer = Answer(response.status_code, response.headers, response.content)
                outcome = core.after_response(request, attempt, deadline, answer)
            if not isinstance(outcome, Retry):
                return outcome
            time.sleep(outcome.delay)
            attempt += 1

    # ── proposals ───────────────────────────────────────────────────────────

    def submit(
        self,
        *,
        panel: str,
        content: str,
        external_ref: str,
        thought_process: str = "",
        title: str = "",
        metadata: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Submitted:
        """Submit agent output. Idempotent by `external_ref`: retrying stores it once."""
        request = self._core.submit(
            panel=panel,
            content=content,
            external_ref=external_ref,
            thought_process=thought_process,
            title=title,
            metadata=metadata,
        )
        return self._send(request, timeout)

    def get(self, proposal_id: int, *, timeout: float | None = None) -> Proposal:
        """A proposal with its tally, judgements, evidence, escalation and decision."""
        return self._send(self._core.get_proposal(proposal_id), timeout)

    def list_proposals(
        self,
        *,
        status: str | None = None,
        panel: str | None = None,
        page_size: int = 50,
        timeout: float | None = None,
    ) -> SyncPager[ProposalSummary]:
        """The proposals this token may see, newest first, every page as you iterate."""
        return SyncPager(
            lambda cursor: self._send(
                self._core.list_proposals(
                    status=status, panel=panel, page_size=page_size, cursor=cursor
                ),
                timeout,
            )
        )

    def wait(
        self,
        proposal_id: int,
        *,
        timeout: float = 600.0,
        until: Iterable[str] = FINAL,
        poll: float = 0.5,
        max_poll: float = 15.0,
    ) -> Proposal:
        """Return the proposal once its status is in `until` (by default decided or
        escalated: an escalated proposal waits for a human, see `decide()`).

        Polls with backoff, and wakes at once when `notify()` passes on a webhook
        about this proposal; the state returned is always read back from the API.
        Transient failures are polled through. Raises `WaitTimeout` (with the last
        state seen) at `timeout`, or at once the error of a server that asks to be
        left alone for longer than the wait has left.
        """
        plan = self._core.wait_plan(
            proposal_id, until=until, timeout=timeout, poll=poll, max_poll=max_poll
        )
        while True:
            try:
                proposal = self.get(proposal_id, timeout=plan.read_timeout())
            except ReviewappError as error:
                outcome = plan.after_failure(error)
            else:
                outcome = plan.after_read(proposal)
            if isinstance(outcome, Proposal):
                return outcome
            with self._news:
                self._news.wait_for(plan.woken, timeout=outcome)
                plan.napped()

    def notify(self, event: Mapping[str, Any]) -> None:
        """Pass on a verified webhook event (see `verify_webhook`): wakes `wait()` for it."""
        with self._news:
            if self._core.heard.record(event) is not None:
                self._news.notify_all()

    # ── external lenses ─────────────────────────────────────────────────────

    def judge(
        self,
        proposal_id: int,
        *,
        lens: str,
        verdict: str,
        rationale: str = "",
        claims: Iterable[Mapping[str, str]] = (),
        timeout: float | None = None,
    ) -> Judgement:
        """Answer for an external lens this client is bound to. A repeat is a ConflictError."""
        request = self._core.judge(
            proposal_id, lens=lens, verdict=verdict, rationale=rationale, claims=claims
        )
        return self._send(request, timeout)

    # ── escalations and decisions ───────────────────────────────────────────

    def list_escalations(
        self, *, status: str | None = None, page_size: int = 50, timeout: float | None = None
    ) -> SyncPager[Escalation]:
        """Escalations of proposals this token may see, newest first."""
        return SyncPager(
            lambda cursor: self._send(
                self._core.list_escalations(status=status, page_size=page_size, cursor=cursor),
                timeout,
            )
        )

    def get_escalation(self, escalation_id: int, *, timeout: float | None = None) -> Escalation:
        """An escalation and why it was raised: the explanation, each lens that failed
        (with its kind and message) and each checker that was inconclusive (with why)."""
        return self._send(self._core.get_escalation(escalation_id), timeout)

    def decide(
        self,
        escalation_id: int,
        outcome: str,
        rationale: str,
        *,
        claims: Mapping[int, str] | None = None,
        tags: list[str] | None = None,
        wrong_reason: list[str] | None = None,
        timeout: float | None = None,
    ) -> Decision | ReviewStatus:
        """Decide an escalation ("approved" or "rejected"; needs the `review` scope).
        `claims` maps claim ids to "correct" / "incorrect" / "irrelevant"; `tags`
        are admin-defined tag names; `wrong_reason` names lenses whose verdict
        matched for the wrong reason. All are signed with the decision (or, where
        the panel needs several reviews, with this person's review).
        The answer is the signed decision, or, where the panel needs several reviews
        and this one decided nothing yet, a ReviewStatus ("awaiting_reviews" or
        "reconcile"). A decided escalation, or a second review by the same person,
        is a ConflictError."""
        request = self._core.decide(
            escalation_id,
            outcome=outcome,
            rationale=rationale,
            claims=claims,
            tags=tags,
            wrong_reason=wrong_reason,
        )
        return self._send(request, timeout)

    def list_decisions(
        self, *, after: int = 0, page_size: int = 100, timeout: float | None = None
    ) -> SyncPager[Decision]:
        """Signed decisions in ascending id, starting after `after`."""
        return SyncPager(
            lambda after: self._send(
                self._core.list_decisions(after=after, page_size=page_size), timeout
            ),
            start=after,
        )

    def get_decision(self, decision_id: int, *, timeout: float | None = None) -> Decision:
        return self._send(self._core.get_decision(decision_id), timeout)

    def keys(self, *, timeout: float | None = None) -> dict[str, str]:
        """The server's trusted public keys, key id → base64. Fetch once and pin them."""
        return self._send(self._core.keys(), timeout)

    # ── webhooks ────────────────────────────────────────────────────────────

    def list_panels(self, *, timeout: float | None = None) -> list[Panel]:
        """The panels a proposal may be submitted to: lenses, quorum, and how long an
        escalation may wait for a person (`review_deadline_seconds`, `on_deadline`), and
        the guarantee each gives (`guarantee`)."""
        return self._send(self._core.list_panels(), timeout)

    def get_guarantee(self, panel: str, *, timeout: float | None = None) -> Guarantee:
        """A panel's guarantee and the evidence per vote pattern (needs `read:all`)."""
        return self._send(self._core.get_guarantee(panel), timeout)

    def list_webhooks(self, *, timeout: float | None = None) -> list[Webhook]:
        return self._send(self._core.list_webhooks(), timeout)

    def create_webhook(
        self,
        url: str,
        events: Iterable[str],
        *,
        description: str = "",
        timeout: float | None = None,
    ) -> Webhook:
        """Register an endpoint; keep the answer's `secret`, it is shown only here."""
        request = self._core.create_webhook(url=url, events=events, description=description)
        return self._send(request, timeout)

    def get_webhook(self, webhook_id: int, *, timeout: float | None = None) -> Webhook:
        return self._send(self._core.get_webhook(webhook_id), timeout)

    def delete_webhook(self, webhook_id: int, *, timeout: float | None = None) -> None:
        """Remove an endpoint and its delivery log."""
        self._send(self._core.delete_webhook(webhook_id), timeout)

    def test_webhook(self, webhook_id: int, *, timeout: float | None = None) -> str:
        """Send a `webhook.ping` to the endpoint; returns its `webhook-id`."""
        return self._send(self._core.test_webhook(webhook_id), timeout)
