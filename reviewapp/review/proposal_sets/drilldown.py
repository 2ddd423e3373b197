"""Conditions a dashboard count and the proposal list it links to both filter with.

Every count on the dashboard is a link to the list of the proposals behind it;
each condition is written once, here or in `queries.PROPOSAL_SETS`, so the
figure and the list cannot drift apart.
"""

from django.db.models import (
    Case,
    CharField,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, NullIf

from reviewapp.review.models import Claim, Decision, Escalation, Judgement
from reviewapp.review.models.escalation import expired_claim_q

# --- reviewer workload ----------------------------------------------------------

UNCLAIMED = ""
_STATUS = Escalation.Status


def escalation_reviewer() -> Case:
    """Whose workload an escalation counts in: who resolved or holds it; UNCLAIMED if nobody."""
    return Case(
        When(
            status=_STATUS.RESOLVED,
            then=Coalesce(
                NullIf(F("decision__decided_by_name"), Value("")),
                F("claimed_by__username"),
                Value(UNCLAIMED),
            ),
        ),
        When(status=_STATUS.CLAIMED, then=Coalesce(F("claimed_by__username"), Value(UNCLAIMED))),
        default=Value(UNCLAIMED),
        output_field=CharField(),
    )


WORKLOAD_COLUMNS = ("open", "claimed", "expired", "resolved")


def workload_columns(now=None) -> dict[str, Q]:
    """The workload table's columns, as filters on escalations (`claimed` counts the
    expired claims too, `expired` those alone)."""
    return {
        "open": Q(status=_STATUS.OPEN),
        "claimed": Q(status=_STATUS.CLAIMED),
        "expired": expired_claim_q(now),
        "resolved": Q(status=_STATUS.RESOLVED),
    }


def workload_q(*, column: str, reviewer: str) -> Q:
    """Proposals with an escalation in `column` of `reviewer`'s workload row."""
    escalations = (
        Escalation.objects.filter(proposal=OuterRef("pk"))
        .annotate(reviewer=escalation_reviewer())
        .filter(workload_columns()[column], reviewer=reviewer)
    )
    return Q(Exists(escalations))


# --- agreement ----------------------------------------------------------------


def all_lenses_judged_q(raters: int) -> Q:
    """Proposals `raters` (two or more) lenses were asked and all judged: Fleiss' items."""
    judged = (
        Judgement.objects.filter(proposal=OuterRef("pk"))
        .order_by()
        .values("proposal")
        .annotate(n=Count("pk"))
        .values("n")[:1]  # one group: the proposal's
    )
    return Q(lenses_asked=raters, lenses_asked__gte=2) & Q(lenses_asked=Subquery(judged))


def with_tally_votes(proposals):
    """`proposals` with their panel's pass and fail votes as integers, for LARGER_SIDE."""
    return proposals.annotate(
        tally_passed=Cast(KT("tally__passed"), IntegerField()),
        tally_failed=Cast(KT("tally__failed"), IntegerField()),
    )


# No-quorum proposals a reviewer decided, against the side with more lens votes
# (on a queryset passed through `with_tally_votes`).
_APPROVED = Q(decision__outcome=Decision.Outcome.APPROVED)
_REJECTED = Q(decision__outcome=Decision.Outcome.REJECTED)
_PASS_LARGER = Q(tally_passed__gt=F("tally_failed"))
_FAIL_LARGER = Q(tally_failed__gt=F("tally_passed"))
LARGER_SIDE_DECIDED = Q(decision__basis=Decision.Basis.REVIEWER, tally__outcome="no_quorum")
LARGER_SIDE = {
    "decided": Q(),
    "agreed": (_APPROVED & _PASS_LARGER) | (_REJECTED & _FAIL_LARGER),
    "disagreed": (_REJECTED & _PASS_LARGER) | (_APPROVED & _FAIL_LARGER),
    "ties": Q(tally_passed=F("tally_failed")),
}

# --- lenses -------------------------------------------------------------------


def lens_claims_q(*, lens_id: int, unresolved: bool = False) -> Q:
    """Proposals holding claims of the lens (only unresolved ones, if asked)."""
    claims = Claim.objects.filter(judgement__proposal=OuterRef("pk"), judgement__lens_id=lens_id)
    if unresolved:
        claims = claims.filter(anchor_kind=Claim.AnchorKind.UNRESOLVED)
    return Q(Exists(claims))
