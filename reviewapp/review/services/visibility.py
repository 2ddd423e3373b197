"""Which proposals an API client may see: the one rule every API door applies.

A client sees the proposals it submitted and those it is bound to judge (an
external lens in the proposal's snapshot names it among its judging clients).
A client holding `review` also sees every escalated proposal (it reviews them).
A client holding `read:all` sees every proposal. Browser sessions (reviewers
and staff) are not API clients and see everything; callers pass `client=None`
for them. Anything derived from a proposal (judgements, escalations,
decisions, evidence, webhook events) is visible exactly when its proposal is.
"""

from django.db.models import Q, QuerySet

from .. import access
from ..models import ApiClient, AwaitedLens, Escalation, Lens, Proposal


def sees_everything(client: ApiClient | None) -> bool:
    # A personal token sees what its reviewer sees in the pages: everything,
    # while its user may review. Asked here too, not only by the API's
    # authentication: webhooks and MCP reach this without passing through it.
    if client is not None and client.user_id is not None:
        return access.may_sign_decisions(client.user)
    return client is None or ApiClient.Scope.READ_ALL in (client.scopes or [])


def may_review(client: ApiClient | None) -> bool:
    """A token with the review scope reviews escalations, so it sees every one of them
    and the proposal behind it (issue 42: a `review,read` token used to list none)."""
    return client is not None and ApiClient.Scope.REVIEW in (client.scopes or [])


def visible_q(client: ApiClient | None, *, prefix: str = "") -> Q:
    """A filter on proposals (or, with `prefix="proposal__"`, on rows that name one).

    One SQL statement: the bound lenses are a subquery, not a list fetched first.
    """
    if sees_everything(client):
        return Q()
    bound_lenses = Lens.objects.filter(backend=Lens.Backend.EXTERNAL, judge_clients=client).values(
        "pk"
    )
    awaiting = AwaitedLens.objects.filter(lens__in=bound_lenses).values("proposal_id")
    visible = Q(**{f"{prefix}client": client}) | Q(**{f"{prefix}pk__in": awaiting})
    if may_review(client):
        escalated = Escalation.objects.values("proposal_id")
        visible |= Q(**{f"{prefix}pk__in": escalated})
    return visible


def proposals_visible_to(client: ApiClient | None) -> QuerySet[Proposal]:
    """Every proposal `client` may see (all of them for a browser session or `read:all`)."""
    return Proposal.objects.filter(visible_q(client))


def client_may_see(*, client: ApiClient | None, proposal: Proposal | int) -> bool:
    """Whether `client` may see `proposal` (a row or its id); costs at most one query."""
    if sees_everything(client):
        return True
    if isinstance(proposal, Proposal) and proposal.client_id == client.pk:
        return True
    proposal_id = proposal.pk if isinstance(proposal, Proposal) else proposal
    return proposals_visible_to(client).filter(pk=proposal_id).exists()


def lens_agreement_readers(*, lens: Lens, clients: list[ApiClient]) -> list[ApiClient]:
    """Those of `clients` that may read `lens`'s agreement with the reviewers; one query at most.

    The figures sum every proposal the lens judged, whoever submitted it, and a
    day's window tells their outcomes one by one: they are for a client that
    sees every proposal, and for a client with the read scope that the lens, an
    external one, names as its judge, since every proposal it judged awaited
    it and so is visible to that client.
    """
    bound: set[int] = set()
    if lens.backend == Lens.Backend.EXTERNAL and not all(sees_everything(c) for c in clients):
        bound = set(lens.judge_clients.values_list("pk", flat=True))
    return [
        c
        for c in clients
        if sees_everything(c) or (c.pk in bound and ApiClient.Scope.READ in (c.scopes or []))
    ]
