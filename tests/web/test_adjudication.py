import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from reviewapp.ledger.models import LedgerEntry
from reviewapp.ledger.services import checkpoint_create, ledger_sequence
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
    assert (
        "You do not hold this escalation (never claimed, lapsed or released)"
        in response.content.decode()
    )
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
    assert "HX-Request" in response["Vary"]  # the page and its fragment share the URL


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


def test_the_proposal_page_shows_a_decision_signed_at_once_while_its_index_is_assigned(
    reviewer_client, reviewer, escalation
):
    decision = _decide(reviewer, escalation)  # the test's transaction never commits
    body = reviewer_client.get(
        reverse("proposal_detail", args=[decision.proposal_id])
    ).content.decode()
    assert 'id="decision-ledger-position">signed; its ledger index is being assigned<' in body
    verify = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="valid"' in verify and "its ledger index is being assigned" in verify


def test_the_proposal_page_shows_the_decisions_ledger_position(
    reviewer_client, reviewer, escalation
):
    decision = _decide(reviewer, escalation)
    ledger_sequence()
    position = LedgerEntry.objects.get(decision_id=decision.pk).leaf_index
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
        LedgerEntry.objects.filter(decision_id=decision.pk).delete()
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="invalid"' in body and "not in the ledger" in body


def test_the_decisions_log_offers_the_ledger_export(reviewer_client):
    body = reviewer_client.get(reverse("decision_list")).content.decode()
    assert reverse("ledger_export") in body


# --- nothing typed is lost; the claim stays alive; decide and go on ------------------


def test_a_refused_decision_comes_back_with_the_typed_rationale(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    response = client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        {"csrfmiddlewaretoken": token, "outcome": "approved", "rationale": "Typed <carefully>."},
    )
    assert response.status_code == 409
    body = response.content.decode()
    assert "You do not hold this escalation" in body
    assert ">Typed &lt;carefully&gt;.</textarea>" in body


def test_an_htmx_refusal_is_the_card_with_a_4xx_status(reviewer, escalation):
    client, token = _csrf_client(reviewer)
    _post(client, token, "escalation_claim", escalation)
    response = client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        {"csrfmiddlewaretoken": token, "outcome": "approved", "rationale": "   "},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="adjudication"')
    assert "A rationale is required to decide." in body


def test_an_htmx_request_without_a_session_gets_401_and_a_login_that_returns_to_the_page(
    client, escalation
):
    page = f"http://testserver/proposals/{escalation.proposal_id}?queue=panel%3D1"
    response = client.post(
        reverse("escalation_claim", args=[escalation.pk]),
        headers={"HX-Request": "true", "HX-Current-URL": page},
    )
    assert response.status_code == 401
    assert response["HX-Redirect"] == (
        f"/login/?session=expired&next=/proposals/{escalation.proposal_id}%3Fqueue%3Dpanel%253D1"
    )


def test_a_plain_post_without_a_session_logs_in_back_to_the_referring_page_not_the_post_url(
    client, escalation
):
    response = client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        headers={"Referer": f"http://testserver/proposals/{escalation.proposal_id}"},
    )
    assert response.status_code == 302
    assert response["Location"] == (
        f"/login/?session=expired&next=/proposals/{escalation.proposal_id}"
    )


def test_a_foreign_referer_never_becomes_the_login_next(client, escalation):
    response = client.post(
        reverse("escalation_decide", args=[escalation.pk]),
        headers={"Referer": "https://evil.example/phish"},
    )
    assert response["Location"] == "/login/?session=expired&next=/"


def test_a_first_visit_goes_to_a_login_that_says_nothing_of_an_expired_session(client, escalation):
    response = client.get(reverse("proposal_detail", args=[escalation.proposal_id]))
    assert response["Location"] == f"/login/?next=/proposals/{escalation.proposal_id}"
    login = client.get(response["Location"]).content.decode()
    assert 'id="session-expired" role="status" hidden' in login


def test_a_session_cookie_naming_no_session_goes_to_a_login_that_says_it_expired(
    client, escalation
):
    client.cookies[settings.SESSION_COOKIE_NAME] = "gone"
    response = client.get(reverse("proposal_detail", args=[escalation.proposal_id]))
    assert response["Location"] == (
        f"/login/?session=expired&next=/proposals/{escalation.proposal_id}"
    )
    login = client.get(response["Location"]).content.decode()
    assert 'id="session-expired" role="status">' in login
    assert "Your session has expired: log in again" in login


def test_heartbeat_renews_the_holders_claim(reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    Escalation.objects.filter(pk=escalation.pk).update(
        claimed_at=timezone.now() - timedelta(minutes=20)
    )
    client, token = _csrf_client(reviewer)
    response = client.post(
        reverse("escalation_heartbeat", args=[escalation.pk]), {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 200 and response.json()["held"] is True
    escalation.refresh_from_db()
    assert timezone.now() - escalation.claimed_at < timedelta(seconds=10)


def test_heartbeat_never_revives_a_lapsed_claim(reviewer, escalation, settings):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    lapsed = timezone.now() - timedelta(minutes=settings.REVIEWAPP_CLAIM_TTL_MINUTES + 1)
    Escalation.objects.filter(pk=escalation.pk).update(claimed_at=lapsed)
    client, token = _csrf_client(reviewer)
    response = client.post(
        reverse("escalation_heartbeat", args=[escalation.pk]), {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 409
    assert "lapsed or was released" in response.json()["message"]
    escalation.refresh_from_db()
    assert escalation.claimed_at == lapsed


def test_heartbeat_does_not_extend_someone_elses_claim(reviewer, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    before = Escalation.objects.get(pk=escalation.pk).claimed_at
    client, token = _csrf_client(second_reviewer)
    response = client.post(
        reverse("escalation_heartbeat", args=[escalation.pk]), {"csrfmiddlewaretoken": token}
    )
    assert (
        response.status_code == 409
        and "rita holds this escalation now" in response.json()["message"]
    )
    assert Escalation.objects.get(pk=escalation.pk).claimed_at == before


def test_next_skips_escalations_held_by_others_and_follows_the_queue_filters(
    reviewer, second_reviewer, panel
):
    from .builders import make_panel, split_panel_proposal

    held, free = (
        split_panel_proposal(panel, content=f"{i}. The sky is blue. Water is wet.")
        for i in range(2)
    )
    elsewhere = split_panel_proposal(make_panel("o-one", "o-two"))
    escalation_claim(escalation_id=Escalation.objects.get(proposal=held).pk, user=second_reviewer)
    client, _ = _csrf_client(reviewer)
    response = client.get(reverse("escalation_next"), {"queue": f"panel={panel.pk}"})
    assert response["Location"].startswith(f"/proposals/{free.pk}?")
    response = client.get(
        reverse("escalation_next"), {"queue": f"panel={panel.pk}&reason=sign_off"}
    )
    assert response["Location"] == f"/?panel={panel.pk}&reason=sign_off"
    assert elsewhere.pk != free.pk


def test_next_follows_the_inbox_search_and_order(reviewer, panel):
    from .builders import split_panel_proposal

    old, new = (
        split_panel_proposal(panel, content=f"{i}. The sky is blue. Water is wet.", title=title)
        for i, title in enumerate(["Refund policy", "Refund window"])
    )
    split_panel_proposal(panel, content="2. The sky is blue. Water is wet.", title="Unrelated")
    client, _ = _csrf_client(reviewer)
    oldest = client.get(reverse("escalation_next"), {"queue": "q=refund&sort=oldest"})
    assert oldest["Location"].startswith(f"/proposals/{old.pk}?")
    newest = client.get(reverse("escalation_next"), {"queue": "q=refund"})
    assert newest["Location"].startswith(f"/proposals/{new.pk}?")


def test_next_under_a_search_that_cannot_run_finds_nothing_rather_than_failing(reviewer, panel):
    from .builders import split_panel_proposal

    split_panel_proposal(panel)
    client, _ = _csrf_client(reviewer)
    response = client.get(reverse("escalation_next"), {"queue": "q=" + "-" * 40})
    assert response.status_code == 302
    assert response["Location"] == "/?q=" + "-" * 40
