import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from reviewapp.ledger.models import LedgerEntry
from reviewapp.ledger.services import checkpoint_create
from reviewapp.review.models import Decision, Escalation
from reviewapp.review.services.escalations import escalation_claim
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def _csrf_client(user) -> tuple[Client, str]:
    """A client that enforces CSRF like a browser, and the token a page gave it."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(reverse("inbox")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    return client, token


def _post(client, token, name, escalation, **data):
    return client.post(
        reverse(name, args=[escalation.pk]), {"csrfmiddlewaretoken": token, **data}, follow=True
    )


def test_claim_without_a_csrf_token_is_refused(reviewer, escalation):
    client, _ = _csrf_client(reviewer)
    response = client.post(reverse("escalation_claim", args=[escalation.pk]))
    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.status == "open"


def test_claim_with_csrf_token_takes_the_escalation(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    response = _post(client, token, "escalation_claim", escalation)
    assert response.redirect_chain[-1][0].startswith(
        reverse("proposal_detail", args=[escalation.proposal_id])
    )
    assert "You hold this escalation." in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.status == "claimed" and escalation.claimed_by == reviewer


def test_htmx_claim_with_header_token_returns_the_adjudication_panel(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    response = client.post(
        reverse("escalation_claim", args=[escalation.pk]),
        headers={**HTMX, "X-CSRFToken": token},
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="adjudication"')
    assert 'id="approve-btn"' in body and 'id="reject-btn"' in body and 'id="release-btn"' in body


def test_body_carries_the_csrf_token_for_htmx(reviewer_client, escalation):
    page = reviewer_client.get(
        reverse("proposal_detail", args=[escalation.proposal_id])
    ).content.decode()
    match = re.search(r"""<body hx-headers='\{"X-CSRFToken": "(\w+)"\}'""", page)
    assert match and len(match.group(1)) >= 32


def test_second_claimer_is_told_who_holds_it(reviewer, second_reviewer, escalation):
    first, first_token = _csrf_client(reviewer)
    second, second_token = _csrf_client(second_reviewer)
    _post(first, first_token, "escalation_claim", escalation)
    response = _post(second, second_token, "escalation_claim", escalation)
    assert "Already claimed by rita" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.claimed_by == reviewer


def test_second_claimer_over_htmx_is_told_who_holds_it(reviewer, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    client, token = _csrf_client(second_reviewer)
    body = client.post(
        reverse("escalation_claim", args=[escalation.pk]), headers={**HTMX, "X-CSRFToken": token}
    ).content.decode()
    assert "Already claimed by rita" in body and 'id="approve-btn"' not in body


def test_proposal_page_shows_who_holds_the_claim(reviewer_client, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    body = reviewer_client.get(
        reverse("proposal_detail", args=[escalation.proposal_id])
    ).content.decode()
    assert "Claimed by sam" in body
    assert 'id="claim-btn"' not in body and 'id="approve-btn"' not in body


def test_release_reopens_the_escalation(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    response = _post(client, token, "escalation_release", escalation)
    assert "Claim released." in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.status == "open" and escalation.claimed_by is None


def test_only_the_holder_can_release(reviewer, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    client, token = _csrf_client(second_reviewer)
    _post(client, token, "escalation_release", escalation)
    escalation.refresh_from_db()
    assert escalation.claimed_by == reviewer


def test_an_expired_claim_can_be_taken_by_someone_else(
    reviewer, second_reviewer, escalation, settings
):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    Escalation.objects.filter(pk=escalation.pk).update(
        claimed_at=timezone.now() - timedelta(minutes=settings.REVIEWAPP_CLAIM_TTL_MINUTES + 1)
    )
    client, token = _csrf_client(second_reviewer)
    page = client.get(reverse("proposal_detail", args=[escalation.proposal_id])).content.decode()
    assert "rita's claim lapsed" in page and 'id="claim-btn"' in page
    _post(client, token, "escalation_claim", escalation)
    escalation.refresh_from_db()
    assert escalation.claimed_by == second_reviewer


def test_decide_signs_the_decision_and_shows_key_id_and_signature(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    response = _post(
        client,
        token,
        "escalation_decide",
        escalation,
        outcome="rejected",
        rationale="Beta is right.",
    )
    decision = Decision.objects.get(proposal_id=escalation.proposal_id)
    assert decision.outcome == "rejected" and decision.basis == "reviewer"
    assert decision.decided_by == reviewer and decision.rationale == "Beta is right."
    body = response.content.decode()
    assert "Decision signed: rejected." in body
    assert f'<code id="decision-key-id">{decision.key_id}</code>' in body
    assert decision.signature in body
    assert reverse("decision_verify", args=[decision.pk]) in body
    escalation.refresh_from_db()
    assert escalation.status == "resolved"


def test_decide_requires_a_rationale(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    response = _post(
        client, token, "escalation_decide", escalation, outcome="approved", rationale="  "
    )
    assert "A rationale is required" in response.content.decode()
    assert not Decision.objects.exists()


def test_decide_requires_a_valid_outcome(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    _post(client, token, "escalation_decide", escalation, outcome="maybe", rationale="Hmm.")
    assert not Decision.objects.exists()


def test_decide_requires_holding_the_claim(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    response = _post(
        client, token, "escalation_decide", escalation, outcome="approved", rationale="Ok."
    )
    assert "You do not hold this escalation (never claimed, lapsed or released)" in response.content.decode()
    assert not Decision.objects.exists()


def test_someone_elses_claim_blocks_deciding(reviewer, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    client, token = _csrf_client(second_reviewer)
    response = _post(
        client, token, "escalation_decide", escalation, outcome="approved", rationale="Ok."
    )
    assert "Claimed by rita: only they can decide it." in response.content.decode()
    assert not Decision.objects.exists()


def test_deciding_twice_leaves_one_decision(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    _post(client, token, "escalation_decide", escalation, outcome="approved", rationale="Ok.")
    response = _post(
        client, token, "escalation_decide", escalation, outcome="rejected", rationale="No."
    )
    assert "already decided" in response.content.decode()
    assert Decision.objects.count() == 1 and Decision.objects.get().outcome == "approved"


def _decide(reviewer, escalation) -> Decision:
    from reviewapp.review.services.escalations import escalation_decide

    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    return escalation_decide(
        escalation_id=escalation.pk,
        outcome="approved",
        rationale="Fine.",
        user=reviewer,
        decided_by_name=reviewer.username,
    )


def test_verify_reports_a_valid_signature(reviewer_client, reviewer, escalation):
    decision = _decide(reviewer, escalation)
    response = reviewer_client.get(reverse("decision_verify", args=[decision.pk]), headers=HTMX)
    body = response.content.decode()
    assert 'data-verified="valid"' in body and decision.key_id in body
    assert "<html" not in body


def test_verify_is_computed_from_the_stored_bytes(reviewer_client, reviewer, escalation):
    decision = _decide(reviewer, escalation)
    # Tamper with the stored bytes behind the application's back.
    tampered = decision.payload.replace('"outcome":"approved"', '"outcome":"rejected"')
    assert tampered != decision.payload
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(payload=tampered)
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="invalid"' in body
    assert "Does not verify" in body


def test_verify_notices_a_row_that_differs_from_its_signed_bytes(
    reviewer_client, reviewer, escalation
):
    decision = _decide(reviewer, escalation)
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(rationale="Edited later.")
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="invalid"' in body and "differs in rationale" in body


def test_verify_without_htmx_is_a_full_page(reviewer_client, reviewer, escalation):
    decision = _decide(reviewer, escalation)
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert "<html" in body and 'data-verified="valid"' in body


def test_the_proposal_page_shows_the_decisions_ledger_position(
    reviewer_client, reviewer, escalation
):
    decision = _decide(reviewer, escalation)
    position = LedgerEntry.objects.get(decision=decision).leaf_index
    body = reviewer_client.get(
        reverse("proposal_detail", args=[decision.proposal_id])
    ).content.decode()
    assert f'id="decision-ledger-position">entry {position}<' in body


def test_verify_reports_inclusion_in_the_signed_checkpoint(reviewer_client, reviewer, escalation):
    decision = _decide(reviewer, escalation)
    checkpoint = checkpoint_create()
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="valid"' in body
    assert f"in the signed checkpoint of size {checkpoint.tree_size}" in body


def test_verify_notices_a_decision_missing_from_the_ledger(reviewer_client, reviewer, escalation):
    decision = _decide(reviewer, escalation)
    with tampering():
        LedgerEntry.objects.filter(decision=decision).delete()
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="invalid"' in body and "not in the ledger" in body


def test_the_decisions_log_offers_the_ledger_export(reviewer_client):
    body = reviewer_client.get(reverse("decision_list")).content.decode()
    assert reverse("ledger_export") in body
