"""The guarantee's answer to the final step: may this vote pattern's outcome stand alone?

One statement answers and counts at once (routing a proposal costs one query
more than without the guarantee, and its audit draw one fewer): it reads
whether the panel's guarantee is on and the pattern trusted under the
configuration the proposal was judged with, adds the decision to its pattern's
day (by the machine, or held for a person), and returns the figures the
escalation shows. Nothing here waits for a lock a label holds: the day's rows
are written by routing alone (one of `SHARDS` per day, so one busy pattern's
decisions seldom wait for each other), and the standing is only read.
"""

from django.db import connection
from django.utils import timezone

from reviewapp.core.guarantee.bound import labels_to_trust
from reviewapp.core.guarantee.configuration import configuration_key
from reviewapp.core.guarantee.focus import audit_rate
from reviewapp.core.guarantee.patterns import VotePattern
from reviewapp.core.guarantee.sequence import chain_alpha
from reviewapp.review.automatic import Ruling
from reviewapp.review.models import Panel, Proposal

from .explain import held_reason
from .models import SHARDS, PanelGuarantee, PatternDay, PatternEvidence

_RETURNED = (
    "target",
    "confidence",
    "audit_focus",
    "audit_rate",
    "trusted",
    "labels",
    "agreed",
    "lower_bound",
    "labels_to_trust",
    "waits_on",
    "audit_factor",
)


def _statement() -> str:
    q = connection.ops.quote_name
    day, guarantee, evidence, panel = (
        q(PatternDay._meta.db_table),
        q(PanelGuarantee._meta.db_table),
        q(PatternEvidence._meta.db_table),
        q(Panel._meta.db_table),
    )
    of_guarantee = f"FROM {guarantee} g WHERE g.panel_id = %(panel)s"
    of_evidence = (
        f"FROM {evidence} e WHERE e.panel_id = %(panel)s "
        "AND e.configuration = %(configuration)s AND e.pattern = %(pattern)s"
    )
    returned = {
        "target": f"(SELECT g.target {of_guarantee})",
        "confidence": f"(SELECT g.confidence {of_guarantee})",
        "audit_focus": f"(SELECT g.audit_focus {of_guarantee})",
        "audit_rate": f"(SELECT p.audit_rate FROM {panel} p WHERE p.id = %(panel)s)",
        **{column: f"(SELECT e.{column} {of_evidence})" for column in _RETURNED[4:]},
    }
    # `WHERE 1 = 1`: SQLite needs a WHERE to tell an upsert's SELECT from a join.
    return f"""
        INSERT INTO {day} (panel_id, configuration, pattern, day, shard, automatic, held)
        SELECT %(panel)s, %(configuration)s, %(pattern)s, %(day)s, %(shard)s,
               1 - ruling.held, ruling.held
        FROM (SELECT CASE
            WHEN EXISTS (SELECT 1 {of_guarantee} AND g.target IS NOT NULL)
             AND NOT EXISTS (SELECT 1 {of_evidence} AND e.trusted)
            THEN 1 ELSE 0 END AS held) ruling
        WHERE 1 = 1
        ON CONFLICT (panel_id, configuration, pattern, day, shard) DO UPDATE SET
            automatic = {day}.automatic + excluded.automatic,
            held = {day}.held + excluded.held
        RETURNING {", ".join(returned[name] for name in _RETURNED)}
    """


def automatic_outcome_rule(*, proposal: Proposal, pattern: VotePattern) -> Ruling:
    """Count the decision under its pattern and say whether it is held for a person."""
    snapshot = proposal.panel_snapshot
    configuration = configuration_key(snapshot)
    with connection.cursor() as cursor:
        cursor.execute(
            _statement(),
            {
                "panel": proposal.panel_id,
                "configuration": configuration,
                "pattern": pattern.key,
                "day": timezone.now().date(),
                "shard": proposal.pk % SHARDS,
            },
        )
        found = dict(zip(_RETURNED, cursor.fetchone(), strict=True))
    held = found["target"] is not None and not found["trusted"]
    labels, agreed = found["labels"] or 0, found["agreed"] or 0
    more = found["labels_to_trust"]
    if more is None and found["target"] is not None:  # no label yet: no row to read it from
        more = labels_to_trust(
            agreed=agreed,
            labels=labels,
            target=found["target"],
            alpha=chain_alpha(found["confidence"]),
        )
    detail = {
        "pattern": pattern.key,
        "votes": pattern.votes,
        "would_be": pattern.outcome,
        "configuration": configuration,
        # Which patterns this configuration can decide: the chain a label is walked in.
        "need": snapshot["need"],
        "target": found["target"],
        "confidence": found["confidence"],
        "labels": labels,
        "agreed": agreed,
        "lower_bound": found["lower_bound"] or 0.0,
        "labels_to_trust": more,
        "waits_on": found["waits_on"] or None,
    }
    focused = found["audit_focus"] == PanelGuarantee.AuditFocus.NEAREST and found["trusted"]
    return Ruling(
        hold=held,
        explanation=held_reason(detail) if held else "",
        detail=detail,
        audit_percent=audit_rate(
            found["audit_rate"] or 0, found["audit_factor"] if focused else None
        ),
    )
