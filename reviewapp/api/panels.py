"""The panels a client may submit to, and the guarantee each gives."""

from datetime import date

from django.http import Http404
from django.shortcuts import get_object_or_404
from ninja import Router, Schema
from ninja.errors import HttpError

from reviewapp.core.json_values import string_problem
from reviewapp.guarantee.queries import GuaranteeFigures, guarantee_figures
from reviewapp.review.models import Panel
from reviewapp.review.services.visibility import sees_everything
from reviewapp.serializers import panel_list

from .auth import ApiAuth
from .schemas import errors

router = Router(tags=["panels"])


class PanelLensOut(Schema):
    name: str
    backend: str


class GuaranteeSummaryOut(Schema):
    target: float
    confidence: float


class PanelOut(Schema):
    name: str
    description: str
    need: int
    lenses: list[PanelLensOut]
    checkers: list[str]
    requires_sign_off: bool
    external_deadline_seconds: int
    guarantee: GuaranteeSummaryOut | None


class PanelsOut(Schema):
    panels: list[PanelOut]


@router.get(
    "/panels",
    auth=ApiAuth(),
    response={200: PanelsOut, **errors()},
    summary="The panels a proposal may be submitted to",
    description="Every active panel: its lenses in order with their backends, `need` (how "
    "many lens verdicts must agree), its checkers, whether an approval needs a person's "
    "sign-off, how long it waits for external judgements, and its `guarantee` (the target "
    "agreement with reviewers and the confidence), null when it has none. Any token may list "
    "them; submitting needs the `submit` scope.",
)
def panels(request):
    return {"panels": panel_list()}


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
