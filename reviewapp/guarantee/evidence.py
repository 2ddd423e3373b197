"""Human labels on vote patterns, each pattern's standing, and every change of trust.

A label comes from a reviewer's decision on a proposal the guarantee held, or
from an audit verdict on an automatic decision (`receivers`). Either is written
in its decision's or verdict's transaction, under the panel's guarantee row
lock: the chain is walked over every pattern of the configuration, so two
labels of one panel take turns, and exactly one of them sees a pattern's trust
change, so each change is recorded and announced once.

A standing is computed under the panel's settings of the moment and stored
with the counts, so routing reads it in its one query and the figures read
rows, never labels.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.services import audit_record
from reviewapp.core.guarantee.focus import audit_factors
from reviewapp.core.guarantee.patterns import VotePattern, possible_patterns
from reviewapp.core.guarantee.sequence import Labels, Standing, own_standing, walk_chains
from reviewapp.review.models import Panel
from reviewapp.webhooks.events import webhook_record_panel_guarantee

from .explain import percent
from .models import PanelGuarantee, PatternDay, PatternEvidence

ACTOR = "guarantee"
# What a standing stores on its row (`_store`).
STANDING_FIELDS = (
    "lower_bound",
    "clears",
    "trusted",
    "labels_to_trust",
    "waits_on",
    "audit_factor",
)


@dataclass(frozen=True)
class Change:
    """A pattern whose trust changed: the machine may now decide it, or may no longer."""

    pattern: VotePattern
    trusted: bool
    standing: Standing


def guarantee_locked(panel_id: int) -> PanelGuarantee:
    """The panel's guarantee row, made (off) if it has none, locked until COMMIT."""
    PanelGuarantee.objects.get_or_create(panel_id=panel_id)
    return PanelGuarantee.objects.select_for_update().select_related("panel").get(panel_id=panel_id)


def label_add(*, panel_id: int, detail: dict, agreed: bool, audit: bool) -> list[Change]:
    """Count one human label on the pattern `detail` names (the ruling kept with its
    escalation or audit), then walk its configuration's chains again."""
    pattern = VotePattern.from_key(detail["pattern"])
    with transaction.atomic(savepoint=False):
        guarantee = guarantee_locked(panel_id)
        row, _ = PatternEvidence.objects.get_or_create(
            panel_id=panel_id,
            configuration=detail["configuration"],
            pattern=pattern.key,
            defaults={"need": detail["need"]},
        )
        row.labels += 1
        row.agreed += int(agreed)
        row.audited += int(audit)
        row.save(update_fields=["labels", "agreed", "audited"])
        return standings_update(
            guarantee=guarantee,
            configuration=detail["configuration"],
            patterns=universe_of(pattern, need=detail["need"]),
            recompute={pattern.key},
        )


def universe_of(pattern: VotePattern, *, need: int) -> list[VotePattern]:
    """Every pattern the configuration `pattern` was decided under can decide."""
    return possible_patterns(lenses=pattern.lenses, need=need, checked=pattern.checked)


def standings_refresh(*, guarantee: PanelGuarantee) -> list[Change]:
    """Every configuration's standings again, under the panel's settings as they are now
    (the caller changed them, holding the row's lock)."""
    universes: dict[str, list[VotePattern]] = {}
    rows = PatternEvidence.objects.filter(panel_id=guarantee.panel_id).values_list(
        "configuration", "pattern", "need"
    )
    for configuration, key, need in rows:
        if configuration not in universes:
            universes[configuration] = universe_of(VotePattern.from_key(key), need=need)
    changes = []
    for configuration, patterns in universes.items():
        changes += standings_update(
            guarantee=guarantee, configuration=configuration, patterns=patterns
        )
    return changes


def standings_update(
    *,
    guarantee: PanelGuarantee,
    configuration: str,
    patterns: list[VotePattern],
    recompute: set[str] | None = None,
    now: datetime | None = None,
) -> list[Change]:
    """Walk the configuration's chains and store every standing that moved.

    The caller holds the guarantee row's lock. `recompute`: the patterns whose
    own standing must be computed again (their counts changed); None: all of
    them (the settings changed). Others keep their stored one. Each change of
    trust gets an audit entry and a `panel.guarantee` webhook event.
    """
    now = now or timezone.now()
    rows = {
        row.pattern: row
        for row in PatternEvidence.objects.filter(
            panel_id=guarantee.panel_id, configuration=configuration
        )
    }
    walked = walk_chains(_own_standings(guarantee, rows, patterns, recompute))
    factors = _audit_factors(guarantee, configuration, walked)
    changes, moved = [], []
    for standing in walked:
        row = rows.get(standing.pattern.key)
        if row is None:
            continue  # no label: nothing stored, and never trusted
        if row.trusted != standing.trusted:
            changes.append(Change(standing.pattern, standing.trusted, standing))
            row.changed_at = now
        if _store(row, standing, factors.get(standing.pattern)):
            moved.append(row)
    PatternEvidence.objects.bulk_update(moved, [*STANDING_FIELDS, "changed_at"])
    for change in changes:
        _announce(guarantee, configuration, change)
    return changes


def _own_standings(
    guarantee: PanelGuarantee,
    rows: dict[str, PatternEvidence],
    patterns: list[VotePattern],
    recompute: set[str] | None,
) -> list[Standing]:
    """Each pattern alone: computed again where asked (or where it has no row), else as
    stored."""
    own = []
    for pattern in {*patterns, *(VotePattern.from_key(key) for key in rows)}:
        row = rows.get(pattern.key)
        if row is None or recompute is None or pattern.key in recompute:
            counts = Labels(row.labels, row.agreed) if row else Labels()
            own.append(
                own_standing(
                    pattern, counts, target=guarantee.target, confidence=guarantee.confidence
                )
            )
        else:
            own.append(stored_standing(pattern, row, guarantee))
    return own


def stored_standing(
    pattern: VotePattern, row: PatternEvidence, guarantee: PanelGuarantee
) -> Standing:
    """The pattern's own standing as last computed under these settings."""
    on = guarantee.target is not None
    return Standing(
        pattern=pattern,
        labels=row.labels,
        agreed=row.agreed,
        lower_bound=row.lower_bound,
        clears=row.clears if on else None,
        trusted=False,
        labels_to_trust=row.labels_to_trust if on else None,
        waits_on=None,
    )


def _store(row: PatternEvidence, standing: Standing, factor: float | None) -> bool:
    """Copy the standing onto its row; whether anything differed."""
    values = {
        "lower_bound": standing.lower_bound,
        "clears": bool(standing.clears),
        "trusted": standing.trusted,
        "labels_to_trust": standing.labels_to_trust,
        "waits_on": standing.waits_on.key if standing.waits_on else "",
        "audit_factor": factor,
    }
    moved = any(getattr(row, name) != value for name, value in values.items())
    for name, value in values.items():
        setattr(row, name, value)
    return moved


def _audit_factors(
    guarantee: PanelGuarantee, configuration: str, walked: list[Standing]
) -> dict[VotePattern, float]:
    """With audits focused, each trusted pattern's multiple of the audit rate."""
    trusted = [s for s in walked if s.trusted]
    if guarantee.audit_focus != PanelGuarantee.AuditFocus.NEAREST or not trusted:
        return {}
    decided = dict(
        PatternDay.objects.filter(panel_id=guarantee.panel_id, configuration=configuration)
        .values_list("pattern")
        .annotate(n=Sum("automatic"))
        .order_by()
    )
    return audit_factors(
        {s.pattern: s.lower_bound - guarantee.target for s in trusted},
        {s.pattern: decided.get(s.pattern.key, 0) for s in trusted},
    )


def _announce(guarantee: PanelGuarantee, configuration: str, change: Change) -> None:
    panel: Panel = guarantee.panel
    standing = change.standing
    now_said = "trusted: the machine decides it" if change.trusted else "not trusted: humans decide"
    audit_record(
        actor=ACTOR,
        action=AuditEntry.Action.UPDATE,
        target_type="panel",
        target=panel,
        changes={
            f"guarantee: {change.pattern.votes}": {
                "old": "not trusted" if change.trusted else "trusted",
                "new": "trusted" if change.trusted else "not trusted",
            }
        },
        note=f"Vote pattern {change.pattern.key} is now {now_said}: {standing.agreed} of "
        f"{standing.labels} labels agreed, lower bound {percent(standing.lower_bound)} against "
        f"a target of {percent(guarantee.target)}.",
    )
    webhook_record_panel_guarantee(
        panel=panel,
        data={
            "configuration": configuration,
            "target": guarantee.target,
            "confidence": guarantee.confidence,
            "pattern": {
                "key": change.pattern.key,
                "votes": change.pattern.votes,
                "outcome": change.pattern.outcome,
                "labels": standing.labels,
                "agreed": standing.agreed,
                "lower_bound": standing.lower_bound,
                "trusted": change.trusted,
                "routed": "machine" if change.trusted else "human",
            },
        },
    )
