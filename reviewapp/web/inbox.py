"""The inbox's rows and counts, with work bounded however many escalations are open.

A count stops at COUNT_LIMIT ("1,000+"), and a list pages through its first
COUNT_LIMIT rows (sort the other way or narrow the filters for the rest): so
no page reads more than a few thousand index entries, at 100 or at 100,000
open escalations. Every page runs the same queries: one for the counts, one
for the page's ids, one for its rows.

Counts without a search read one index per reason (PostgreSQL: migration
0011), stopping at COUNT_LIMIT + 1 rows. With a search they come from one
sample: the first COUNT_LIMIT + 1 matches the database finds, in no order.
When that is every match the counts are exact; when it is not, "All" is
"1,000+" and a reason's count is shown only if the sample alone reaches the
limit.

The page of a search is read one of two ways on PostgreSQL, chosen from that
count rather than by the planner, whose guess from word statistics can be
far off (two common words that never meet): a few matches (at most
COUNT_LIMIT) are read from the GIN index and sorted; many are found by
walking the age-ordered index and testing each row, which finds a page the
sooner the more rows match.
"""

from dataclasses import dataclass

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.db.models.functions import Coalesce
from django.http import QueryDict

from reviewapp.review.models import Escalation
from reviewapp.review.search_queries import TypedSearch, escalation_text_q, search_typed

from .presenters import REASON_LABELS

COUNT_LIMIT = 1_000
AUDIT = Escalation.Reason.AUDIT.value
# Age order; both walk the inbox_open index.
AGE_SORTS = {"newest": ("-created_at", "-id"), "oldest": ("created_at", "id")}
INBOX_SORTS = {
    **AGE_SORTS,
    # The panel's priority, then oldest first. No index holds a joined
    # column: the database sorts the open rows (top-N, for one page).
    "priority": ("-proposal__panel__priority", "created_at", "id"),
    # The review deadline, soonest first; those without one last, oldest first.
    "due": (F("due_at").asc(nulls_last=True), "created_at", "id"),
}
# "assigned to me", "assigned to one of my groups"
ASSIGNED_FILTERS = ("me", "groups")
# Ids are BIGINT primary keys: anything outside that range matches nothing.
_ID_RANGE = range(1, 2**63)


def reason_q(reason: str) -> Q:
    # `reasons` is a JSON list of fixed codes. PostgreSQL tests containment on
    # the jsonb itself, the very predicate of its per-reason indexes. SQLite
    # has no JSON containment, so there the quoted code is matched as text.
    if connection.vendor == "postgresql":
        return Q(reasons__contains=[reason])
    return Q(reasons__icontains=f'"{reason}"')


@dataclass(frozen=True)
class InboxFilters:
    reason: str = ""
    panel_id: int | None = None
    sort: str = "newest"
    mine: bool = False
    assigned: str = ""
    search: TypedSearch = TypedSearch()


def inbox_filters(params: QueryDict) -> InboxFilters:
    """The inbox filters in `params`: a value that cannot be one is ignored, a bad search kept."""
    try:
        panel_id = int(params.get("panel", ""))
    except ValueError:
        panel_id = 0  # not None: `None in range(...)` walks the whole range
    reason = params.get("reason", "")
    sort = params.get("sort", "")
    return InboxFilters(
        reason=reason if reason in REASON_LABELS else "",
        panel_id=panel_id if panel_id in _ID_RANGE else None,
        sort=sort if sort in INBOX_SORTS else "newest",
        mine=params.get("mine") == "1",
        assigned=params.get("assigned", "") if params.get("assigned") in ASSIGNED_FILTERS else "",
        search=search_typed(params.get("q", "")),
    )


def inbox_base(filters: InboxFilters, user, *, scan: bool = False):
    """Open escalations under every filter but the reason (the reason counts are taken over it).

    With `scan`, the search is written so that no index can answer it (see the module).
    """
    if filters.search.error:
        return Escalation.objects.none()  # a search that can never run matches nothing
    rows = Escalation.objects.undecided()
    if filters.panel_id is not None:
        rows = rows.filter(proposal__panel_id=filters.panel_id)
    if filters.mine:
        rows = rows.filter(status=Escalation.Status.CLAIMED, claimed_by=user)
    if filters.assigned == "me":
        rows = rows.filter(assigned_user=user)  # the FK's index
    elif filters.assigned == "groups":
        # A subquery, not a list read first: the page keeps its query count.
        rows = rows.filter(assigned_group__in=user.groups.values("pk"))
    if filters.search.query is not None:
        found = escalation_text_q(filters.search.query)
        if scan:
            found = Q(Coalesce(ExpressionWrapper(found, BooleanField()), False))
        rows = rows.filter(found)
    return rows


def inbox_rows(filters: InboxFilters, user, *, scan: bool = False):
    """The listed escalations, in the inbox's order.

    Audits of automatic decisions are listed apart (their own reason, and a
    section below the default list), so they never push escalations down.
    """
    rows = inbox_base(filters, user, scan=scan)
    if filters.reason:
        rows = rows.filter(reason_q(filters.reason))
    else:
        rows = rows.exclude(reason_q(AUDIT))
    return rows.order_by(*INBOX_SORTS[filters.sort])


def inbox_audits(filters: InboxFilters, user):
    """The open audits under the filters, for the section below the default list."""
    rows = inbox_base(filters, user).filter(reason_q(AUDIT))
    return rows.order_by(*INBOX_SORTS[filters.sort])


@dataclass(frozen=True)
class InboxCount:
    """How many rows, counted up to COUNT_LIMIT + 1; when not `exact`, at least `n`."""

    n: int
    exact: bool = True

    @property
    def over(self) -> bool:
        return self.n > COUNT_LIMIT

    @property
    def listable(self) -> int:
        """How many of them a list pages through."""
        return min(self.n, COUNT_LIMIT)

    @property
    def label(self) -> str:
        """As shown: "42", "1,000+", or nothing when only a lower bound under the limit is known."""
        if self.over:
            return f"{COUNT_LIMIT:,}+"
        return f"{self.n:,}" if self.exact else ""


def capped_count(rows) -> InboxCount:
    """How many `rows`, counted up to COUNT_LIMIT + 1, in one query."""
    return InboxCount(rows[: COUNT_LIMIT + 1].count())


def _capped_sql(rows) -> tuple[str, tuple]:
    sql, params = rows.order_by().values("pk")[: COUNT_LIMIT + 1].query.sql_with_params()
    return f"(SELECT COUNT(*) FROM ({sql}) capped)", tuple(params)


def inbox_counts(filters: InboxFilters, user) -> dict[str, InboxCount]:
    """The counts of "all", of each reason and of "listed" (what the list shows), in one query.

    Composed in SQL because each count is over its own LIMITed subquery,
    which the ORM would run one query each.
    """
    base = inbox_base(filters, user)
    if base.query.is_empty():
        return {key: InboxCount(0) for key in ("all", "listed", *REASON_LABELS)}
    names = ["all", *REASON_LABELS]
    if filters.search.query is None:
        parts = [_capped_sql(base), *(_capped_sql(base.filter(reason_q(r))) for r in REASON_LABELS)]
        sample = ("", ())
    else:
        flags = {f"r_{r}": ExpressionWrapper(reason_q(r), BooleanField()) for r in REASON_LABELS}
        sql, params = (
            base.order_by()
            .annotate(**flags)
            .values(*flags)[: COUNT_LIMIT + 1]
            .query.sql_with_params()
        )
        sample = (f" FROM ({sql}) sample", tuple(params))
        parts = [("COUNT(*)", ())] + [
            (f"COALESCE(SUM(CASE WHEN sample.r_{r} THEN 1 ELSE 0 END), 0)", ())
            for r in REASON_LABELS
        ]
        if filters.reason:
            # The sample may hold none of a reason's matches though there are many.
            names.append("listed")
            parts.append(_capped_sql(base.filter(reason_q(filters.reason))))
    sql = "SELECT " + ", ".join(part for part, _ in parts) + sample[0]
    params = tuple(p for _, part_params in parts for p in part_params) + sample[1]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        values = dict(zip(names, cursor.fetchone(), strict=True))

    # A search's counts are exact when its sample held every match.
    complete = filters.search.query is None or values["all"] <= COUNT_LIMIT
    counts = {name: InboxCount(n, exact=complete or name == "listed") for name, n in values.items()}
    if not filters.reason:
        # The default list leaves the audits to their own section.
        every, audits = counts["all"], counts[AUDIT]
        listed = every.n - audits.n if not (every.over or audits.over) else every.n
        counts["listed"] = InboxCount(listed, exact=every.exact and audits.exact)
    counts.setdefault("listed", counts[filters.reason or "all"])
    return counts


def inbox_page_rows(filters: InboxFilters, user, listed: InboxCount):
    """The listed rows, read the cheap way for how many there are (see the module)."""
    if (
        filters.search.query is None
        or connection.vendor != "postgresql"
        or filters.sort not in AGE_SORTS
    ):
        return inbox_rows(filters, user)
    if not listed.over:
        # An order no index gives: PostgreSQL reads the few matches from the
        # GIN index and sorts them, instead of walking every open escalation.
        direction = "desc" if filters.sort == "newest" else "asc"
        age = getattr(Coalesce(F("created_at"), F("created_at")), direction)()
        return inbox_rows(filters, user).order_by(age, getattr(F("id"), direction)())
    return inbox_rows(filters, user, scan=True)
