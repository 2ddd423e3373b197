"""The reviewer's queue: the open escalations under the inbox's filters, and what comes next.

The proposal page does not know which inbox view the reviewer came from, so
the browser hands the inbox's query string back (`queue`); without it the
queue is every open escalation. The filters read here are the inbox's own.
"""

from django.http import QueryDict

from reviewapp.review.models import Escalation
from reviewapp.review.models.escalation import held_by_others_q

from .inbox import InboxCount, capped_count, inbox_filters, inbox_rows


def queue_params(raw: str) -> QueryDict:
    """The inbox filters carried in `raw` (a query string), without its page number."""
    params = QueryDict(raw[:2000] if raw else "", mutable=True)
    params.pop("page", None)
    return params


def queue_rows(params: QueryDict, *, user):
    """Open escalations under the inbox filters in `params`, in the inbox's order.

    A search that cannot run (too long, no word) matches nothing, as in the inbox.
    """
    return inbox_rows(inbox_filters(params), user)


def queue_next(
    params: QueryDict, *, user, after_id: int | None = None
) -> tuple[Escalation | None, InboxCount]:
    """The next escalation `user` can take (not held by someone else) and how many are left.

    Two queries: the count (capped as the inbox's), then the first row nobody else holds.
    """
    rows = queue_rows(params, user=user)
    if after_id is not None:
        rows = rows.exclude(pk=after_id)
    left = capped_count(rows)
    return rows.exclude(held_by_others_q(user)).only("pk", "proposal_id").first(), left
