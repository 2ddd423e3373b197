"""What became of the proposals: all final, each exactly once, the decision chain intact."""

from __future__ import annotations

import time


def wait_all_final(expected: int, *, timeout: float, poll: float = 0.25, progress=None) -> float:
    """Poll until `expected` proposals are decided or escalated; returns when (monotonic)."""
    from reviewapp.review.models import Proposal

    deadline = time.monotonic() + timeout
    while True:
        done = Proposal.objects.filter(
            status__in=[Proposal.Status.DECIDED, Proposal.Status.ESCALATED]
        ).count()
        if done >= expected:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {done} of {expected} proposals final after {timeout}s")
        if progress:
            progress(done)
        time.sleep(poll)


def outcome_audit() -> dict[str, int]:
    """Exactly-once check: per proposal, decisions + open escalations must be exactly 1.

    A proposal escalated and then decided by a reviewer has a resolved escalation
    and one decision: still 1. Returns counts of each kind of proposal.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT
              count(*) AS proposals,
              count(*) FILTER (WHERE p.status IN ('decided', 'escalated')) AS final,
              count(*) FILTER (WHERE p.status IN ('queued', 'evaluating')) AS not_final,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) = 1) AS exactly_once,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) = 0) AS no_outcome,
              count(*) FILTER (WHERE coalesce(d.n, 0) + coalesce(e.n, 0) > 1) AS duplicated,
              coalesce(sum(d.n), 0) AS decisions,
              coalesce(sum(e.n), 0) AS open_escalations,
              coalesce(sum(a.n), 0) AS escalations_all,
              count(*) FILTER (WHERE p.status = 'decided' AND coalesce(d.n, 0) <> 1)
                AS decided_wo_decision,
              count(*) FILTER (WHERE p.status = 'escalated' AND coalesce(e.n, 0) <> 1)
                AS escalated_wo_escalation
            FROM review_proposal p
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_decision GROUP BY 1) d
              ON d.proposal_id = p.id
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_escalation
                       WHERE status <> 'resolved' GROUP BY 1) e ON e.proposal_id = p.id
            LEFT JOIN (SELECT proposal_id, count(*) n FROM review_escalation GROUP BY 1) a
              ON a.proposal_id = p.id
            """
        )
        names = [c.name for c in cursor.description]
        row = cursor.fetchone()
        audit = dict(zip(names, (int(v) for v in row), strict=True))
        cursor.execute(
            "SELECT count(*) FROM (SELECT proposal_id, lens_id FROM review_judgement "
            "GROUP BY 1, 2 HAVING count(*) > 1) t"
        )
        audit["duplicate_judgements"] = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM (SELECT proposal_id, checker_id FROM review_evidence "
            "GROUP BY 1, 2 HAVING count(*) > 1) t"
        )
        audit["duplicate_evidence"] = cursor.fetchone()[0]
    return audit


def verify_chain() -> tuple[int, str | None]:
    from reviewapp.review.services.decisions import decisions_verify_chain

    result = decisions_verify_chain()
    return result.decisions, result.problem
