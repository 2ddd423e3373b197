"""The reviewer's queue: the open escalations under the inbox's filters, and what comes next.

The proposal page does not know which inbox view the reviewer came from, so
the browser hands the inbox's query string back (`queue`); without it the
queue is every open escalation. The filters read here are the inbox's own.
"""

from django.db.models import Q
from django.http import QueryDict
from django.utils import timezone

from reviewapp.review.models import Escalation

from .presenters import REASON_LABELS, claim_ttl
from .search import clean_query, proposal_text_q
from .views import INBOX_SORTS, OPEN_STATUSES, _reason_q

_ID_RANGE = range(1, 2**63)


def queue_params(raw: str) -> QueryDict:
    """The inbox filters carried in `raw` (a query string), without its page number."""
    params = QueryDict(raw[:2000] if raw else "", mutable=True)
    params.pop("page", None)
    return params


def _panel_id(params: QueryDict) -> int | None:
    try:
        value = int(params.get("panel", ""))
    except ValueError:
        return None
    return value if value in _ID_RANGE else None


def queue_rows(params: QueryDict, *, user):
    """Open escalations under the inbox filters in `params`, in the inbox's order."""
    rows = Escalation.objects.filter(status__in=OPEN_STATUSES)
    panel_id = _panel_id(params)
    if panel_id is not None:
        rows = rows.filter(proposal__panel_id=panel_id)
    if params.get("mine") == "1":
        rows = rows.filter(status=Escalation.Status.CLAIMED, claimed_by=user)
    if q := clean_query(params.get("q", "")):
        rows = rows.filter(proposal_text_q(q, id_field="proposal_id"))
    reason = params.get("reason", "")
    if reason in REASON_LABELS:
        rows = rows.filter(_reason_q(reason))
    return rows.order_by(*INBOX_SORTS.get(params.get("sort", ""), INBOX_SORTS["newest"]))


def queue_next(
    params: QueryDict, *, user, after_id: int | None = None
) -> tuple[Escalation | None, int]:
    """The next escalation `user` can take (not held by someone else) and how many are left.

    Two queries: the count, then the first row nobody else holds.
    """
    rows = queue_rows(params, user=user)
    if after_id is not None:
        rows = rows.exclude(pk=after_id)
    left = rows.count()
    held_by_other = Q(
        status=Escalation.Status.CLAIMED, claimed_at__gte=timezone.now() - claim_ttl()
    ) & ~Q(claimed_by=user)
    return rows.exclude(held_by_other).only("pk", "proposal_id").first(), left
