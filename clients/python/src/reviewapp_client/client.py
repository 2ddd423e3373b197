"""A reviewapp API client for agent systems: submit, wait, judge, verify."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

FINAL = ("decided", "escalated")
_RETRYABLE = (429, 502, 503, 504)


class ApiError(Exception):
    """The API refused the request; `detail` is its `{"detail"}` (a string or a list)."""

    def __init__(self, status: int, detail: Any):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


class WaitTimeout(TimeoutError):
    """`wait()` ran out of time; `proposal` is the last state seen."""

    def __init__(self, proposal: Proposal):
        super().__init__(f"proposal {proposal.id} still {proposal.status}")
        self.proposal = proposal


@dataclass(frozen=True)
class Submitted:
    id: int
    status: str
    url: str
    created: bool  # False: this external_ref was already submitted with this body


@dataclass(frozen=True)
class Decision:
    id: int
    proposal: int
    outcome: str  # "approved" | "rejected"
    basis: str  # "system" | "reviewer"
    decided_by: str
    rationale: str
    payload: str  # the exact signed bytes
    signature: str
    key_id: str
    hash: str

    @classmethod
    def from_api(cls, data: Mapping) -> Decision:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Judgement:
    lens: str
    lens_version: int
    verdict: str
    rationale: str
    claims: list[dict] = field(default_factory=list)

    @classmethod
    def from_api(cls, data: Mapping) -> Judgement:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Proposal:
    id: int
    status: str
    panel: str
    title: str
    content_sha256: str
    tally: dict | None
    escalation: dict | None
    decision: Decision | None
    judgements: list[Judgement]
    raw: dict = field(repr=False)

    @property
    def final(self) -> bool:
        return self.status in FINAL

    @property
    def approved(self) -> bool:
        return self.decision is not None and self.decision.outcome == "approved"

    @classmethod
    def from_api(cls, data: Mapping) -> Proposal:
        return cls(
            id=data["id"],
            status=data["status"],
            panel=data["panel"],
            title=data["title"],
            content_sha256=data["content_sha256"],
            tally=data.get("tally"),
            escalation=data.get("escalation"),
            decision=Decision.from_api(data["decision"]) if data.get("decision") else None,
            judgements=[Judgement.from_api(j) for j in data.get("judgements", [])],
            raw=dict(data),
        )


class Client:
    """`Client(base_url, token)`; one instance is safe to share between threads."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ):
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}", "User-Agent": "reviewapp-client/0.1"},
            timeout=timeout,
            transport=transport,
        )
        self._retries = retries
        self._news = threading.Condition()
        self._heard: dict[int, str] = {}  # proposal id → the status a webhook last reported

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ── requests ────────────────────────────────────────────────────────────

    def _request(self, method: str, path: str, *, idempotent: bool, **kwargs) -> httpx.Response:
        """One request; transient failures are retried only where repeating is safe."""
        delay = 0.5
        for attempt in range(self._retries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError:
                if not idempotent or attempt == self._retries:
                    raise
            else:
                if response.status_code not in _RETRYABLE or not idempotent:
                    break
                if attempt == self._retries:
                    break
                delay = float(response.headers.get("Retry-After", delay))
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise ApiError(response.status_code, detail)
        return response

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
    ) -> Submitted:
        """Submit agent output. Idempotent by `external_ref`: retrying stores it once."""
        body = {
            "panel": panel,
            "content": content,
            "external_ref": external_ref,
            "thought_process": thought_process,
            "title": title,
            "metadata": dict(metadata or {}),
        }
        response = self._request("POST", "/api/proposals", json=body, idempotent=True)
        data = response.json()
        return Submitted(data["id"], data["status"], data["url"], response.status_code == 202)

    def get(self, proposal_id: int) -> Proposal:
        response = self._request("GET", f"/api/proposals/{proposal_id}", idempotent=True)
        return Proposal.from_api(response.json())

    def wait(
        self,
        proposal_id: int,
        *,
        timeout: float = 600.0,
        until: Iterable[str] = FINAL,
        poll: float = 0.5,
        max_poll: float = 15.0,
    ) -> Proposal:
        """Return the proposal once its status is in `until` (decided or escalated).

        Polls with backoff, and wakes at once when `notify()` passes on a
        webhook about this proposal. The webhook only wakes the wait: the state
        returned is always read back from the API.
        """
        wanted = set(until)
        deadline = time.monotonic() + timeout
        while True:
            proposal = self.get(proposal_id)
            if proposal.status in wanted:
                return proposal
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(proposal)
            with self._news:
                self._news.wait_for(
                    lambda: self._heard.get(proposal_id) in wanted, timeout=min(poll, remaining)
                )
            poll = min(poll * 1.6, max_poll)

    def notify(self, event: Mapping[str, Any]) -> None:
        """Pass on a verified webhook event (see `verify_webhook`): wakes `wait()` for it."""
        proposal = (event.get("data") or {}).get("proposal") or {}
        if "id" in proposal:
            with self._news:
                self._heard[proposal["id"]] = proposal.get("status", "")
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
    ) -> Judgement:
        """Answer for an external lens this client is bound to. A repeat is a 409 ApiError."""
        body = {"lens": lens, "verdict": verdict, "rationale": rationale, "claims": list(claims)}
        response = self._request(
            "POST", f"/api/proposals/{proposal_id}/judgements", json=body, idempotent=False
        )
        return Judgement.from_api(response.json())

    # ── keys ────────────────────────────────────────────────────────────────

    def keys(self) -> dict[str, str]:
        """The server's trusted public keys, key id → base64. Fetch once and pin them."""
        response = self._request("GET", "/api/keys", idempotent=True)
        return {key["key_id"]: key["public_key"] for key in response.json()}
