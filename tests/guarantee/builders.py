"""Panels with a guarantee, and evidence for their vote patterns, written quickly."""

from django.db import transaction

from reviewapp.core.guarantee.configuration import configuration_key
from reviewapp.guarantee.configure import guarantee_configure
from reviewapp.guarantee.evidence import guarantee_locked, standings_refresh
from reviewapp.guarantee.models import PatternEvidence
from reviewapp.review.services.proposals import panel_snapshot
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import judgement

CONTENT = "Use merge sort: it sorts in O(n log n) time."
UNANIMOUS = "approved:3p0f0m:unchecked"
MAJORITY = "approved:2p1f0m:unchecked"


def voting_panel(verdicts, *, need=2, checkers=(), content=CONTENT, **kwargs):
    """A panel of recorded lenses that answer `content` with `verdicts`, in order."""
    lenses = [LensFactory() for _ in verdicts]
    for lens, verdict in zip(lenses, verdicts, strict=True):
        recorded(lens, content, judgement(verdict, "sorts in O(n log n) time"))
    return PanelFactory(lenses=lenses, need=need, checkers=list(checkers), **kwargs)


def guaranteed(panel, *, target=0.95, confidence=0.95, audit_focus="flat"):
    guarantee_configure(
        panel=panel, target=target, confidence=confidence, audit_focus=audit_focus, actor="test"
    )
    return panel


def evidence(panel, pattern: str, *, labels: int, agreed: int, audited: int = 0):
    """`labels` human labels on `pattern` under the panel's current configuration."""
    with transaction.atomic():
        guarantee = guarantee_locked(panel.pk)
        PatternEvidence.objects.update_or_create(
            panel=panel,
            configuration=configuration_key(panel_snapshot(panel)),
            pattern=pattern,
            defaults={"need": panel.need, "labels": labels, "agreed": agreed, "audited": audited},
        )
        standings_refresh(guarantee=guarantee)
