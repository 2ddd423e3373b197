"""Staff take over or hand on a held claim; claims, releases and trials are audited."""

import re

import pytest
from django.urls import reverse

from reviewapp.audit.models import AuditEntry
from reviewapp.audit.trials import trial_start
from reviewapp.review.models import Escalation, Lens
from reviewapp.review.services.escalations import (
    ClaimHeldByOther,
    EscalationClosed,
    NotStaff,
    escalation_claim,
    escalation_reassign,
    escalation_release,
)
from tests.factories import ReviewerFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def chief(db):
    return ReviewerFactory(username="chief", is_staff=True)


def _entries(action):
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


def test_staff_take_over_a_claim_someone_else_holds(client, chief, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    client.force_login(chief)
    response = client.post(
        reverse("escalation_reassign", args=[escalation.pk]), {"note": "sam is away"}
    )
    assert response.status_code == 302
    escalation.refresh_from_db()
    assert (escalation.status, escalation.claimed_by) == ("claimed", chief)
    [entry] = _entries("reassign")
    assert entry.actor == chief and entry.target_type == "escalation"
    assert entry.changes == {"claimed_by": {"old": "sam", "new": "chief"}}
    assert entry.note == "sam is away"


def test_staff_reassign_a_claim_to_another_reviewer(
    client, chief, reviewer, second_reviewer, escalation
):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    client.force_login(chief)
    client.post(reverse("escalation_reassign", args=[escalation.pk]), {"to": "rita"})
    escalation.refresh_from_db()
    assert escalation.claimed_by == reviewer
    assert _entries("reassign")[0].changes["claimed_by"] == {"old": "sam", "new": "rita"}


def test_a_reviewer_who_is_not_staff_cannot_reassign(reviewer_client, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    response = reviewer_client.post(reverse("escalation_reassign", args=[escalation.pk]))
    assert response.status_code == 403
    escalation.refresh_from_db()
    assert escalation.claimed_by == second_reviewer
    assert _entries("reassign") == []


def test_reassigning_to_an_unknown_user_changes_nothing(client, chief, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    client.force_login(chief)
    response = client.post(
        reverse("escalation_reassign", args=[escalation.pk]), {"to": "nobody"}, follow=True
    )
    assert "No active user is called" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.claimed_by == second_reviewer


def test_a_decided_escalation_cannot_be_reassigned(chief, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(status="resolved")
    with pytest.raises(EscalationClosed):
        escalation_reassign(escalation_id=escalation.pk, to_user=chief, by_user=chief)
    assert _entries("reassign") == []


def test_the_service_refuses_non_staff(reviewer, escalation):
    with pytest.raises(NotStaff):
        escalation_reassign(escalation_id=escalation.pk, to_user=reviewer, by_user=reviewer)


def test_claims_and_releases_appear_in_the_audit_log(reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=reviewer)
    escalation_release(escalation_id=escalation.pk, user=reviewer)
    [claim] = _entries("claim")
    [release] = _entries("release")
    assert claim.actor == reviewer == release.actor
    assert claim.target_id == str(escalation.pk)
    assert f"proposal {escalation.proposal_id}" in claim.target_repr


def test_a_refused_claim_is_not_audited(reviewer, second_reviewer, escalation):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    with pytest.raises(ClaimHeldByOther):
        escalation_claim(escalation_id=escalation.pk, user=reviewer)
    assert [e.actor for e in _entries("claim")] == [second_reviewer]


def test_trials_appear_in_the_audit_log(chief, escalation):
    lens = Lens.objects.get(name="accuracy")
    trial = trial_start(kind="lens", target=lens, sample="Some sample.", user=chief)
    [entry] = _entries("trial")
    assert (entry.actor, entry.target_type, entry.target_id) == (chief, "lens", str(lens.pk))
    assert f"trial {trial.pk}" in entry.note


def test_staff_see_the_take_over_form_and_reviewers_do_not(
    client, chief, reviewer_client, escalated
):
    page = reviewer_client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()
    assert "data-reassign" not in page
    client.force_login(chief)
    page = client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()
    assert "data-reassign" in page and "Moving a claim is recorded in the audit log" in page


def test_each_take_over_control_sits_under_its_own_label(client, chief, escalated):
    client.force_login(chief)
    page = client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()

    card = re.search(r'<section class="card staff-claim".*?</section>', page, re.S).group(0)
    # A label and its input share a stacked .field; they flowed inline, each
    # label beside the previous input.
    for name, label in (("to", "Give it to"), ("note", "Why")):
        assert re.search(
            rf'<div class="field">\s*<label for="reassign-{name}">{label}\b.*?</label>\s*'
            rf'<input type="text" id="reassign-{name}" name="{name}"[^>]*>\s*</div>',
            card,
            re.S,
        ), name
    assert re.search(r'<div class="actions"><button[^>]*data-reassign', card)


def test_the_proposal_page_shows_what_each_lens_was_told(reviewer_client, escalated):
    Lens.objects.filter(name="accuracy").update(
        instructions="Check every figure against the source."
    )
    page = reviewer_client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()
    assert "What each lens was told" in page
    assert "Check every figure against the source." in page
    assert 'data-guideline="tone"' in page


def test_a_lens_changed_since_says_its_text_is_the_current_one(reviewer_client, escalated):
    lens = Lens.objects.get(name="accuracy")
    lens.instructions = "A new angle."
    lens.save()
    page = reviewer_client.get(reverse("proposal_detail", args=[escalated.pk])).content.decode()
    assert "The lens has changed since it judged this proposal" in page


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"to": "nobody"}, "No active user is called"),
        ({"to": "ri\x00ta"}, "No active user is called"),
        ({"to": "r" * 200}, "No active user is called"),
        ({"note": "away\x00"}, "The note cannot contain"),
        ({"note": "n" * 501}, "The note is limited to 500 characters"),
    ],
    ids=["unknown user", "NUL in the name", "overlong name", "NUL in the note", "overlong note"],
)
def test_bad_reassign_input_is_a_400_that_changes_nothing(
    client, chief, second_reviewer, escalation, form, message
):
    escalation_claim(escalation_id=escalation.pk, user=second_reviewer)
    client.force_login(chief)
    response = client.post(reverse("escalation_reassign", args=[escalation.pk]), form)
    assert response.status_code == 400
    assert message in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.claimed_by == second_reviewer
    assert _entries("reassign") == []


def test_reassigning_to_someone_who_may_not_sign_is_a_400(client, chief, escalation):
    UserFactory(username="outsider")
    client.force_login(chief)
    response = client.post(reverse("escalation_reassign", args=[escalation.pk]), {"to": "outsider"})
    assert response.status_code == 400
    assert "Not reassigned" in response.content.decode()
    assert _entries("reassign") == []


def test_reassigning_a_decided_escalation_is_a_409(client, chief, escalation):
    Escalation.objects.filter(pk=escalation.pk).update(status=Escalation.Status.RESOLVED)
    client.force_login(chief)
    response = client.post(reverse("escalation_reassign", args=[escalation.pk]))
    assert response.status_code == 409
    assert "already decided" in response.content.decode()
    assert _entries("reassign") == []


def test_reassigning_an_escalation_in_reconcile_is_a_409_and_leaves_it_to_reconcilers(
    client, chief, escalation
):
    Escalation.objects.filter(pk=escalation.pk).update(status=Escalation.Status.RECONCILE)
    client.force_login(chief)
    response = client.post(reverse("escalation_reassign", args=[escalation.pk]))
    assert response.status_code == 409
    assert "a reconciler decides it" in response.content.decode()
    escalation.refresh_from_db()
    assert (escalation.status, escalation.claimed_by) == (Escalation.Status.RECONCILE, None)
    assert _entries("reassign") == []
