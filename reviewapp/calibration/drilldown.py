"""Which proposals a calibration figure counts: filters for the proposal list.

Each figure on the dashboard and in the admin links to the proposal list
with these parameters; the list applies the Q built here, so a number and
the rows behind it are counted by the same rule.
"""

from datetime import date, timedelta

from django.db.models import Exists, F, OuterRef, Q

from .models import HumanLabel, LensLabel
from .queries import OVERTURNED_Q

# A cell of a lens's table against the humans, or a summary of cells.
CELLS = {
    "labelled": Q(),
    "agreed": Q(passed=F("approved")),
    "disagreed": ~Q(passed=F("approved")),
    "pass_approved": Q(passed=True, approved=True),
    "pass_rejected": Q(passed=True, approved=False),
    "fail_approved": Q(passed=False, approved=True),
    "fail_rejected": Q(passed=False, approved=False),
    "approved": Q(approved=True),
    "rejected": Q(approved=False),
}
CELL_WORDS = {
    "labelled": "decided by a reviewer",
    "agreed": "where the reviewer agreed with it",
    "disagreed": "where the reviewer disagreed with it",
    "pass_approved": "that it passed and the reviewer approved",
    "pass_rejected": "that it passed and the reviewer rejected",
    "fail_approved": "that it failed and the reviewer approved",
    "fail_rejected": "that it failed and the reviewer rejected",
    "approved": "that the reviewer approved",
    "rejected": "that the reviewer rejected",
}
KINDS = {"escalation": Q(audit=False), "audit": Q(audit=True)}


def _window_q(since: date | None, until: date | None) -> Q:
    q = Q()
    if since:
        q &= Q(decided_at__gte=since)
    if until and until < date.max:  # the last date there is bounds nothing, and has no next day
        q &= Q(decided_at__lt=until + timedelta(days=1))
    return q


def lens_label_q(*, lens_id: int, cell: str, kind: str | None = None, since=None, until=None) -> Q:
    """Proposals the lens judged whose human label falls in `cell` (a CELLS key)."""
    rows = LensLabel.objects.filter(
        CELLS[cell], _window_q(since, until), proposal=OuterRef("pk"), lens_id=lens_id
    )
    if kind:
        rows = rows.filter(KINDS[kind])
    return Q(Exists(rows))


def both_wrong_q(*, lens_id: int, lens2_id: int, since=None, until=None) -> Q:
    """Proposals both lenses judged and both got wrong against the reviewer."""
    return lens_label_q(lens_id=lens_id, cell="disagreed", since=since, until=until) & (
        lens_label_q(lens_id=lens2_id, cell="disagreed", since=since, until=until)
    )


AUDITED = {"all": Q(), "overturned": OVERTURNED_Q}
AUDITED_WORDS = {
    "all": "whose automatic decision a reviewer audited",
    "overturned": "whose automatic decision a reviewer audited and overturned",
}


def audited_q(*, which: str, since=None, until=None) -> Q:
    """Audited automatic decisions (AUDITED: all, or those the reviewer decided the other way)."""
    rows = HumanLabel.objects.filter(
        AUDITED[which], _window_q(since, until), audit=True, proposal=OuterRef("pk")
    )
    return Q(Exists(rows))
