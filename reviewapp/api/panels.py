"""The panels a client may submit to, what each does with a proposal, and its guarantee."""

from datetime import date
from typing import Literal

from django.http import Http404
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema
from ninja.errors import HttpError

from reviewapp.core.json_values import string_problem
from reviewapp.guarantee.queries import GuaranteeFigures, guarantee_figures
from reviewapp.review.models import Panel
from reviewapp.review.services.visibility import sees_everything
from reviewapp.serializers import panel_out, panels_open

from .auth import ApiAuth
from .schemas import OnDeadline, errors

router = Router(tags=["panels"])


class PanelLensOut(Schema):
    name: str
    backend: Literal["llm", "constraints", "external", "recorded"]


class GuaranteeSummaryOut(Schema):
    target: float
    confidence: float


class PanelOut(Schema):
    name: str = Field(description="What `POST /api/proposals` names as `panel`.")
    description: str
    need: int = Field(description="Lens verdicts that must agree for the panel to decide.")
    lenses: list[PanelLensOut] = Field(description="In the panel's order.")
    checkers: list[str]
    requires_sign_off: bool = Field(description="A reached pass still goes to a person.")
    reviews_needed: int = Field(description="Independent human reviews an escalation needs.")
    external_deadline_seconds: int = Field(description="How long external lenses are awaited.")
    review_deadline_seconds: int | None = Field(
        description="How long an escalation may wait for a person; null: until someone decides."
    )
    on_deadline: OnDeadline | None = Field(
        description="What the review deadline does: `reject` or `approve` (a decision signed "
        "by the server with basis `fallback`) or `keep_open` (reviewers are reminded). Null "
        "without a deadline."
    )
    guarantee: GuaranteeSummaryOut | None = Field(
        description="What the panel promises: at least `target` of its automatic decisions "
        "match what a reviewer would decide, with `confidence` (`GET "
        "/api/panels/{name}/guarantee` has the evidence). Null: no guarantee."
    )


class PanelListOut(Schema):
    items: list[PanelOut]


@router.get(
    "/panels",
    auth=ApiAuth(),
    response={200: PanelListOut, **errors()},
    summary="The panels a proposal may be submitted to",
    description="Active panels, by name: their lenses and quorum, their review deadline "
    "(`review_deadline_seconds`, `on_deadline`), so an agent knows how long it may wait, and "
    "the guarantee each gives (`guarantee`), so it knows when the machine decides alone.",
)
def panel_list(request):
    return {"items": [panel_out(panel) for panel in panels_open()]}


class ConfigurationOut(Schema):
    key: str
    text: str
    since: date | None


class PatternOut(Schema):
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


class OverallOut(Schema):
    decisions: int
    estimate: float | None
    low: float | None
    high: float | None


class GuaranteeOut(Schema):
    panel: str
    enabled: bool
    target: float | None
    confidence: float
    promise: str
    method: str
    audit_focus: str
    configuration: ConfigurationOut
    patterns: list[PatternOut]
    overall: OverallOut


@router.get(
    "/panels/{name}/guarantee",
    auth=ApiAuth("read"),
    url_name="panel_guarantee",
    response={200: GuaranteeOut, **errors(404)},
    summary="A panel's guarantee and the evidence behind it",
    description="What the panel promises (`target`: the share of its automatic decisions "
    "that match what a reviewer would decide; `confidence`; null target: no guarantee, the "
    "quorum alone decides), how it is tested (`method`), and, for the panel's current "
    "configuration (its lenses, their versions, `need` and checkers; a change starts new "
    "evidence), each vote pattern it can decide alone: `votes` in words, the `outcome` the "
    "vote gives, how many decisions were `automatic` and how many `held` for a person, the "
    "human `labels` (of which `audited` came from audits) and how many `agreed`, the "
    "anytime-valid `lower_bound` on its agreement, whether it is `trusted` and so `routed` "
    "to the `machine` or to a `human`, how many more agreeing labels it needs "
    "(`labels_to_trust`) and the stronger pattern it `waits_on`, if any. `overall` is the "
    "agreement of all automatic decisions, each pattern weighted by how many it made, with a "
    "simultaneous interval at `confidence`. The figures count every client's proposals: a "
    "token reads them with `read:all` (or as a reviewer's personal token); for any other the "
    "panel is a 404.",
)
def panel_guarantee(request, name: str):
    if string_problem(name):  # no panel is so named, and PostgreSQL refuses a NUL outright
        raise Http404("no such panel")
    panel = get_object_or_404(Panel, name=name)
    client = request.auth.client
    if client is not None and not sees_everything(client):
        raise HttpError(
            404,
            f"no panel {name!r} whose guarantee this token may read: the figures count every "
            "client's proposals, so they need 'read:all' (or a reviewer's personal token)",
        )
    return guarantee_out(guarantee_figures(panel))


def guarantee_out(figures: GuaranteeFigures) -> dict:
    guarantee = figures.guarantee
    return {
        "panel": figures.panel.name,
        "enabled": guarantee.enabled,
        "target": guarantee.target,
        "confidence": guarantee.confidence,
        "promise": figures.promise,
        "method": figures.method,
        "audit_focus": guarantee.audit_focus,
        "configuration": {
            "key": figures.configuration,
            "text": figures.configuration_text,
            "since": figures.since,
        },
        "patterns": [
            {
                "pattern": p.pattern.key,
                "votes": p.pattern.votes,
                "outcome": p.pattern.outcome,
                "automatic": p.automatic,
                "held": p.held,
                "labels": p.standing.labels,
                "audited": p.audited,
                "agreed": p.standing.agreed,
                "lower_bound": p.standing.lower_bound,
                "trusted": p.standing.trusted,
                "routed": p.routed,
                "labels_to_trust": p.standing.labels_to_trust,
                "waits_on": p.standing.waits_on.key if p.standing.waits_on else None,
            }
            for p in figures.patterns
        ],
        "overall": {
            "decisions": figures.overall.decisions,
            "estimate": figures.overall.estimate,
            "low": figures.overall.low,
            "high": figures.overall.high,
        },
    }
