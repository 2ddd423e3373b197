"""A panel's guarantee and its evidence, as `GET /api/panels/{name}/guarantee` answers
it; read as `models` reads the rest (the summary `GET /api/panels` gives is there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from .models import ShapeError, _share, items, obj, req


@dataclass(frozen=True)
class GuaranteePattern:
    """One vote pattern: its decisions, its human labels, its bound, and who decides it
    (`routed`: "machine" or "human")."""

    pattern: str
    votes: str
    outcome: str
    automatic: int
    held: int
    labels: int
    audited: int
    agreed: int
    lower_bound: float
    trusted: bool
    routed: str
    labels_to_trust: int | None
    waits_on: str | None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> GuaranteePattern:
        return cls(
            pattern=req(data, "pattern", str, at=at),
            votes=req(data, "votes", str, at=at),
            outcome=req(data, "outcome", str, at=at),
            automatic=req(data, "automatic", int, at=at),
            held=req(data, "held", int, at=at),
            labels=req(data, "labels", int, at=at),
            audited=req(data, "audited", int, at=at),
            agreed=req(data, "agreed", int, at=at),
            lower_bound=_share(data, "lower_bound", at=at),
            trusted=req(data, "trusted", bool, at=at),
            routed=req(data, "routed", str, at=at),
            labels_to_trust=req(data, "labels_to_trust", int, type(None), at=at),
            waits_on=req(data, "waits_on", str, type(None), at=at),
        )


@dataclass(frozen=True)
class GuaranteeConfiguration:
    """The panel's configuration the evidence belongs to, and since when it decides."""

    key: str
    text: str
    since: date | None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> GuaranteeConfiguration:
        since = req(data, "since", str, type(None), at=at)
        try:
            day = date.fromisoformat(since) if since is not None else None
        except ValueError as exc:
            raise ShapeError(f"{at}.since: not an ISO 8601 date: {since[:40]!r}") from exc
        return cls(req(data, "key", str, at=at), req(data, "text", str, at=at), day)


@dataclass(frozen=True)
class GuaranteeOverall:
    """The agreement of all automatic decisions, patterns weighted by what they decided."""

    decisions: int
    estimate: float | None
    low: float | None
    high: float | None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> GuaranteeOverall:
        return cls(
            decisions=req(data, "decisions", int, at=at),
            estimate=_share(data, "estimate", at=at, nullable=True),
            low=_share(data, "low", at=at, nullable=True),
            high=_share(data, "high", at=at, nullable=True),
        )


@dataclass(frozen=True)
class Guarantee:
    """A panel's guarantee and its evidence (`GET /api/panels/{name}/guarantee`)."""

    panel: str
    enabled: bool
    target: float | None
    confidence: float
    promise: str
    method: str
    audit_focus: str
    configuration: GuaranteeConfiguration
    patterns: list[GuaranteePattern]
    overall: GuaranteeOverall

    @classmethod
    def from_api(cls, data: Mapping, at: str = "guarantee") -> Guarantee:
        return cls(
            panel=req(data, "panel", str, at=at),
            enabled=req(data, "enabled", bool, at=at),
            target=_share(data, "target", at=at, nullable=True),
            confidence=_share(data, "confidence", at=at),
            promise=req(data, "promise", str, at=at),
            method=req(data, "method", str, at=at),
            audit_focus=req(data, "audit_focus", str, at=at),
            configuration=GuaranteeConfiguration.from_api(
                obj(req(data, "configuration", dict, at=at), f"{at}.configuration"),
                f"{at}.configuration",
            ),
            patterns=items(data, "patterns", GuaranteePattern.from_api, at=at),
            overall=GuaranteeOverall.from_api(
                obj(req(data, "overall", dict, at=at), f"{at}.overall"), f"{at}.overall"
            ),
        )
