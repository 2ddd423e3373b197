"""Recording events in the outbox, inside the transaction that makes them true.

Each `webhook_record_*` is called before the event commits, by this app's
receiver of review's signal (receivers.py) for a decision, an escalation, a
claim or a submission, and by calibration for a lens's drift: the delivery
rows commit or roll back with the event, so an event is never announced that
did not happen, and never happens unannounced. Sending starts
after commit; if the broker is down then, the sweeper sends later.
"""

import json
import secrets

from django.db import connection, transaction
from django.urls import reverse
from django.utils import timezone

from reviewapp.review.access import may_sign_decisions, may_sign_decisions_many
from reviewapp.review.models import (
    ApiClient,
    Decision,
    DecisionAudit,
    Escalation,
    Lens,
    Panel,
    Proposal,
)
from reviewapp.review.services.visibility import (
    client_may_see,
    lens_agreement_readers,
    sees_everything,
)
from reviewapp.serializers import escalation_why

from .models import PING, Delivery, Endpoint, Event


def webhook_decided_watchers(*, proposal: Proposal) -> list[Endpoint]:
    """The endpoints `webhook_record_decided` will tell, asked before the decision exists
    (`decision_append` asks before it signs).

    The active endpoints read here are kept on the proposal for the `escalation.expired`
    of the same fallback decision, told moments later in the same transaction
    (`webhook_record_expired` takes them, once): thousands of deadlines falling
    together would otherwise read them twice each."""
    every = _subscribed_all()
    proposal._webhook_endpoints_for_expiry = every
    return _visible_to(_of_event(every, Event.PROPOSAL_DECIDED), proposal)


def webhook_record_decided(*, decision: Decision, watchers: list[Endpoint] | None = None) -> None:
    proposal = decision.proposal
    if watchers is None:
        watchers = webhook_decided_watchers(proposal=proposal)
    if not watchers:
        return  # nothing to build (reverse() would load the URLconf into a worker)
    data = {
        # Said outright: a reviewer's decision is written before the caller's
        # copy of the proposal knows it is decided.
        "proposal": {**_proposal_part(proposal), "status": Proposal.Status.DECIDED.value},
        "decision": _decision_part(decision),
    }
    _record(Event.PROPOSAL_DECIDED, data, watchers, proposal=proposal)


def webhook_record_disputed(*, audit: DecisionAudit) -> None:
    """A reviewer's audit disagrees with an automatic decision (which stands)."""
    decision = audit.decision
    proposal = decision.proposal
    watchers = _watchers(Event.DECISION_DISPUTED, proposal)
    if not watchers:
        return
    data = {
        "proposal": _proposal_part(proposal),
        "decision": {
            "id": decision.pk,
            "outcome": decision.outcome,
            "basis": decision.basis,
            "hash": decision.hash,
        },
        # The audit verdict's signed bytes: a receiver verifies it with the public key.
        "audit": {
            "id": audit.pk,
            "outcome": audit.outcome,
            "decided_by": audit.decided_by_name,
            "rationale": audit.rationale,
            "payload": audit.payload,
            "signature": audit.signature,
            "key_id": audit.key_id,
            "hash": audit.hash,
        },
    }
    _record(Event.DECISION_DISPUTED, data, watchers, proposal=proposal)


def webhook_record_escalated(*, escalation: Escalation) -> None:
    proposal = escalation.proposal
    watchers = _watchers(Event.PROPOSAL_ESCALATED, proposal)
    if not watchers:
        return
    data = {
        "proposal": _proposal_part(proposal),
        # Why, as the API's escalation says it: a receiver need not call back to learn it.
        "escalation": {
            **_escalation_part(escalation),
            **escalation_why(escalation, proposal.lens_failures.all()),
        },
    }
    _record(Event.PROPOSAL_ESCALATED, data, watchers, proposal=proposal)


def webhook_record_withdrawn(*, proposal: Proposal, escalation: Escalation | None) -> None:
    """Its submitter took the proposal back before it was decided; an escalation that
    waited for a person is closed as withdrawn (no decision)."""
    watchers = _watchers(Event.PROPOSAL_WITHDRAWN, proposal)
    if not watchers:
        return
    data = {
        "proposal": _proposal_part(proposal),
        "escalation": None if escalation is None else _escalation_part(escalation),
    }
    _record(Event.PROPOSAL_WITHDRAWN, data, watchers, proposal=proposal)


def webhook_record_claimed(*, escalation: Escalation) -> None:
    """For dashboards mirroring the queue."""
    _record_escalation_change(escalation, Event.ESCALATION_CLAIMED)


def webhook_record_released(*, escalation: Escalation) -> None:
    _record_escalation_change(escalation, Event.ESCALATION_RELEASED)


def webhook_record_review_submitted(*, escalation: Escalation, reviews: int) -> None:
    """A review was given. Blind: who and what stay out (a receiver may be a reviewer's
    tool); the count says how far the escalation is."""
    _record_escalation_change(
        escalation,
        Event.ESCALATION_REVIEW_SUBMITTED,
        reviews={"submitted": reviews, "needed": escalation.reviews_needed},
    )


def webhook_record_reconcile(*, escalation: Escalation) -> None:
    """The reviews disagree: the escalation waits for a reconciler."""
    _record_escalation_change(
        escalation,
        Event.ESCALATION_RECONCILE,
        reviews={"submitted": escalation.reviews_needed, "needed": escalation.reviews_needed},
    )


def webhook_record_expired(*, escalation: Escalation, decision: Decision | None) -> None:
    """The escalation's review deadline passed. With a fallback (reject or approve) the
    escalation is resolved and `decision` is the fallback decision, signed and marked so
    (`proposal.decided` tells of it too); with keep_open, `decision` is null and it waits on."""
    proposal = escalation.proposal
    every = proposal.__dict__.pop("_webhook_endpoints_for_expiry", None)
    if decision is None or every is None:
        every = _subscribed_all()
    watchers = _visible_to(_of_event(every, Event.ESCALATION_EXPIRED), proposal)
    if not watchers:
        return
    data = {
        "proposal": {
            **_proposal_part(proposal),
            # Said outright: the fallback is written before the caller's copy knows it.
            "status": Proposal.Status.DECIDED.value if decision else proposal.status,
        },
        "escalation": _escalation_part(escalation),
        "decision": None if decision is None else _decision_part(decision),
    }
    _record(Event.ESCALATION_EXPIRED, data, watchers, proposal=proposal)


def _decision_part(decision: Decision) -> dict:
    """The signed bytes exactly as stored, with the signature and key id: a receiver
    verifies the decision itself with the public key.

    Written in the decision's transaction, before the ledger's sequencer gives it an
    index: ``ledger_index`` is null here, and ``GET /api/decisions/{id}`` has it moments
    later."""
    return {
        "id": decision.pk,
        "outcome": decision.outcome,
        "basis": decision.basis,
        "decided_by": decision.decided_by_name,
        "payload": decision.payload,
        "signature": decision.signature,
        "key_id": decision.key_id,
        "hash": decision.hash,
        "ledger_index": None,
    }


def _record_escalation_change(escalation: Escalation, event_type: str, **extra) -> None:
    proposal = escalation.proposal
    watchers = _watchers(event_type, proposal)
    if not watchers:
        return
    data = {
        "proposal": _proposal_part(proposal),
        "escalation": {
            **_escalation_part(escalation),
            "claimed_by": escalation.claimed_by.get_username() if escalation.claimed_by else None,
            **extra,
        },
    }
    _record(event_type, data, watchers, proposal=proposal)


def _escalation_part(escalation: Escalation) -> dict:
    return {
        "id": escalation.pk,
        "status": escalation.status,
        "reasons": list(escalation.reasons),
        # When its panel's review deadline falls, and what happens then (null: none).
        "due_at": escalation.due_at.isoformat() if escalation.due_at else None,
        "on_deadline": escalation.on_deadline or None,
    }


def webhook_record_judgement_requested(*, proposal: Proposal) -> None:
    """Tell the clients bound to each external lens that this proposal awaits their judgement."""
    lens_ids = [e["id"] for e in proposal.panel_snapshot["lenses"] if e["backend"] == "external"]
    if not lens_ids:
        return  # the common case costs no query
    endpoints = _subscribed(Event.JUDGEMENT_REQUESTED)
    if not endpoints:
        return
    bound = Lens.judge_clients.through.objects.filter(lens_id__in=lens_ids).values_list(
        "lens_id", "apiclient_id"
    )
    clients_of: dict[int, set[int]] = {}
    for lens_id, client_id in bound:
        clients_of.setdefault(lens_id, set()).add(client_id)
    lenses = {e["id"]: e for e in proposal.panel_snapshot["lenses"]}
    deadline = proposal.external_deadline_at.isoformat() if proposal.external_deadline_at else None
    judge_url = reverse("api:proposal_detail", args=[proposal.pk]) + "/judgements"
    for lens_id in lens_ids:
        targets = [e for e in endpoints if e.client_id in clients_of.get(lens_id, ())]
        lens = lenses[lens_id]
        data = {
            "proposal": _proposal_part(proposal),
            "lens": {"id": lens_id, "name": lens["name"], "version": lens["version"]},
            "deadline": deadline,
            "judge_url": judge_url,
        }
        _record(Event.JUDGEMENT_REQUESTED, data, targets, proposal=proposal)


def webhook_record_lens_drift(*, lens: Lens, event_type: str, data: dict) -> None:
    """A lens's agreement with the reviewers crossed its floor (lens.drift) or came back.

    Heard by the subscribed endpoints whose client may ask the same figures of
    GET /api/lenses/{name}/agreement (`lens_agreement_readers`): they sum other
    clients' decisions, which a submit-only or a plain read client may not see.
    """
    subscribed = _subscribed(event_type)
    readers = {
        c.pk for c in lens_agreement_readers(lens=lens, clients=[e.client for e in subscribed])
    }
    endpoints = [e for e in subscribed if e.client_id in readers]
    lens_part = {"id": lens.pk, "name": lens.name, "version": lens.version}
    _record(event_type, {"lens": lens_part, **data}, endpoints, proposal=None)


def webhook_record_panel_guarantee(*, panel: Panel, data: dict) -> None:
    """A vote pattern of `panel` gained or lost its guarantee's trust (once per change).

    Heard by the subscribed endpoints whose client may read the panel's guarantee
    (GET /api/panels/{name}/guarantee): its figures sum every client's proposals.
    """
    endpoints = [e for e in _subscribed(Event.PANEL_GUARANTEE) if sees_everything(e.client)]
    if not endpoints:
        return
    panel_part = {
        "id": panel.pk,
        "name": panel.name,
        "url": reverse("api:panel_guarantee", args=[panel.name]),
    }
    _record(Event.PANEL_GUARANTEE, {"panel": panel_part, **data}, endpoints, proposal=None)


def webhook_record_ping(*, endpoint: Endpoint) -> Delivery:
    data = {"endpoint": {"id": endpoint.pk, "url": endpoint.url}}
    return _record(PING, data, [endpoint], proposal=None)[0]


def _proposal_part(proposal: Proposal) -> dict:
    return {
        "id": proposal.pk,
        "status": proposal.status,
        "url": reverse("api:proposal_detail", args=[proposal.pk]),
    }


def _subscribed(event_type: str) -> list[Endpoint]:
    return _of_event(_subscribed_all(), event_type)


def _of_event(endpoints: list[Endpoint], event_type: str) -> list[Endpoint]:
    # Filtered here, not with a JSON lookup: SQLite has no `contains` on JSON,
    # and the active endpoints are few.
    return [e for e in endpoints if event_type in e.events]


def _subscribed_all() -> list[Endpoint]:
    """Every active endpoint whose client may hear anything, whatever it subscribed to."""
    # Asked of every decision and escalation, where most installations have no endpoint
    # at all: a plain EXISTS says so, for a tenth of the CPU of building the query below
    # (raw SQL: composing even the EXISTS costs the ORM several times what it costs the
    # database to answer).
    if not _any_endpoint_enabled():
        return []
    endpoints = list(
        Endpoint.objects.filter(
            disabled_at__isnull=True, client__in=ApiClient.objects.live()
        ).select_related("client__user")
    )
    # A personal token's endpoint hears nothing once its user may no longer review;
    # asked for all of them in one query, whatever the number of reviewers subscribed.
    may_sign_decisions_many(e.client.user for e in endpoints if e.client.user_id)
    return [e for e in endpoints if e.client.user_id is None or may_sign_decisions(e.client.user)]


_ANY_ENABLED_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {Endpoint._meta.db_table} WHERE disabled_at IS NULL)"
)


def _any_endpoint_enabled() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_ANY_ENABLED_SQL)
        return bool(cursor.fetchone()[0])


def _watchers(event_type: str, proposal: Proposal) -> list[Endpoint]:
    """Subscribed endpoints whose client may see the proposal (the API's visibility rule)."""
    return _visible_to(_subscribed(event_type), proposal)


def _visible_to(endpoints: list[Endpoint], proposal: Proposal) -> list[Endpoint]:
    if not any(e["backend"] == "external" for e in proposal.panel_snapshot["lenses"]):
        # No external lens, so no client is bound to judge it: only the
        # submitter and `read:all` see it, and asking the database is moot.
        return [
            e for e in endpoints if e.client_id == proposal.client_id or sees_everything(e.client)
        ]
    return [e for e in endpoints if client_may_see(client=e.client, proposal=proposal)]


def _record(
    event_type: str, data: dict, endpoints: list[Endpoint], *, proposal: Proposal | None
) -> list[Delivery]:
    if not endpoints:
        return []
    now = timezone.now()
    rows = []
    for endpoint in endpoints:
        part = data
        if (
            proposal is not None
            and proposal.external_ref
            and proposal.client_id == endpoint.client_id
        ):
            # The submitter's own label for the proposal; other clients never see it.
            part = {**data, "proposal": {**data["proposal"], "external_ref": proposal.external_ref}}
        body = {"type": event_type, "timestamp": now.isoformat(), "data": part}
        rows.append(
            Delivery(
                endpoint=endpoint,
                webhook_id="msg_" + secrets.token_urlsafe(18),
                event_type=event_type,
                body=json.dumps(body, ensure_ascii=False, separators=(",", ":")),
                next_attempt_at=now,
            )
        )
    # No savepoint: the rows belong to the caller's transaction.
    with transaction.atomic(savepoint=False):
        created = Delivery.objects.bulk_create(rows)
        ids = [row.pk for row in created]
        # robust: a broker outage must not fail the event; the sweeper sends later.
        transaction.on_commit(lambda: _enqueue(ids), robust=True)
    return created


def _enqueue(delivery_ids: list[int]) -> None:
    from .tasks import deliver_webhook

    with deliver_webhook.app.producer_or_acquire() as producer:
        for delivery_id in delivery_ids:
            deliver_webhook.apply_async((delivery_id,), producer=producer)
