"""A panel's guarantee as its page, the dashboard and the API show it: read from rows, never labels.

Five queries whatever the number of labels: the settings, the panel's current
configuration (two), the evidence rows, and the day sums of decisions.
"""

from dataclasses import dataclass
from datetime import date

from django.db.models import Min, Sum

from reviewapp.core.guarantee.configuration import configuration_key, configuration_text
from reviewapp.core.guarantee.patterns import APPROVED, VotePattern, possible_patterns
from reviewapp.core.guarantee.sequence import (
    Labels,
    Overall,
    Standing,
    overall,
    own_standing,
    walk_chains,
)
from reviewapp.review.models import Panel
from reviewapp.review.services.proposals import panel_snapshot

from .configure import guarantee_of
from .evidence import stored_standing
from .explain import promise
from .models import PanelGuarantee, PatternDay, PatternEvidence

METHOD = (
    "anytime-valid lower confidence bound per vote pattern: Robbins' one-sided beta-mixture "
    "confidence sequence (Howard, Ramdas, McAuliffe & Sekhon 2021); patterns tested strongest "
    "first in a fixed sequence per outcome, 1 − confidence shared between approvals and "
    "rejections"
)
MACHINE, HUMAN = "machine", "human"


@dataclass(frozen=True)
class PatternFigures:
    standing: Standing
    automatic: int
    held: int
    audited: int
    routed: str  # MACHINE or HUMAN

    @property
    def pattern(self) -> VotePattern:
        return self.standing.pattern


@dataclass(frozen=True)
class GuaranteeFigures:
    panel: Panel
    guarantee: PanelGuarantee
    configuration: str
    configuration_text: str
    # The first day a decision of this configuration was routed (None: none yet).
    since: date | None
    patterns: list[PatternFigures]
    overall: Overall

    @property
    def promise(self) -> str:
        return promise(target=self.guarantee.target, confidence=self.guarantee.confidence)

    @property
    def method(self) -> str:
        return METHOD


def guarantee_figures(panel: Panel) -> GuaranteeFigures:
    guarantee = guarantee_of(panel)
    snapshot = panel_snapshot(panel)
    configuration = configuration_key(snapshot)
    rows = {
        row.pattern: row
        for row in PatternEvidence.objects.filter(panel=panel, configuration=configuration)
    }
    days = {
        row["pattern"]: row
        for row in PatternDay.objects.filter(panel=panel, configuration=configuration)
        .values("pattern")
        .annotate(automatic=Sum("automatic"), held=Sum("held"), since=Min("day"))
        .order_by()
    }
    universe = possible_patterns(
        lenses=len(snapshot["lenses"]), need=snapshot["need"], checked=bool(snapshot["checkers"])
    )
    own = []
    for pattern in {*universe, *(VotePattern.from_key(key) for key in (*rows, *days))}:
        row = rows.get(pattern.key)
        own.append(
            stored_standing(pattern, row, guarantee)
            if row
            else own_standing(
                pattern, Labels(), target=guarantee.target, confidence=guarantee.confidence
            )
        )
    patterns = []
    for standing in walk_chains(own):
        day = days.get(standing.pattern.key, {})
        row = rows.get(standing.pattern.key)
        patterns.append(
            PatternFigures(
                standing=standing,
                automatic=day.get("automatic") or 0,
                held=day.get("held") or 0,
                audited=row.audited if row else 0,
                routed=_routed(standing, guarantee, snapshot["requires_sign_off"]),
            )
        )
    return GuaranteeFigures(
        panel=panel,
        guarantee=guarantee,
        configuration=configuration,
        configuration_text=configuration_text(snapshot),
        since=min((d["since"] for d in days.values()), default=None),
        patterns=patterns,
        overall=overall(
            ((Labels(p.standing.labels, p.standing.agreed), p.automatic) for p in patterns),
            confidence=guarantee.confidence,
        ),
    )


def _routed(standing: Standing, guarantee: PanelGuarantee, sign_off: bool) -> str:
    """Who decides this pattern's proposals now."""
    if sign_off and standing.pattern.outcome == APPROVED:
        return HUMAN  # the panel asks a person to sign off every approval
    if guarantee.target is None:
        return MACHINE  # the quorum decides, as without a guarantee
    return MACHINE if standing.trusted else HUMAN
