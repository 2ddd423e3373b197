"""Panels through the admin: every quorum refusal is a form error, nothing half-saved."""

import pytest

from reviewapp.audit.models import AuditEntry
from reviewapp.core import quorum
from reviewapp.review.models import Lens, Panel, PanelLens
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

from .helpers import add_url, change_url, errors_of, panel_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def lenses():
    return [LensFactory(name=n) for n in ("accuracy", "policy", "tone")]


def _refused(response, message: str):
    assert response.status_code == 200, response.status_code  # re-rendered, not redirected
    text = errors_of(response)
    assert message in text, text


@pytest.mark.parametrize(
    "need, picks, expected",
    [
        (0, [0, 1, 2], str(quorum.NeedsNobody())),
        (3, [0, 1], str(quorum.Unreachable(3, 2))),
        (1, [0, 1], str(quorum.NotAMajority(1, 2))),
        (2, [0, 1, 2, 3], None),  # filled in below: two of four is not a majority
        (2, [0, 0, 1], str(quorum.RepeatedLens("accuracy"))),
    ],
    ids=["needs-nobody", "unreachable", "not-a-majority", "half-of-four", "repeated-lens"],
)
def test_each_quorum_refusal_is_a_form_error_and_nothing_is_saved(
    admin_client_ada, lenses, need, picks, expected
):
    pool = [*lenses, LensFactory(name="arithmetic")]
    chosen = [pool[i] for i in picks]
    expected = expected or str(quorum.NotAMajority(2, 4))
    response = admin_client_ada.post(
        add_url("panel"), panel_form_data(name="p", need=need, lenses=chosen)
    )
    _refused(response, expected)
    assert not Panel.objects.exists()
    assert not PanelLens.objects.exists()
    assert not AuditEntry.objects.filter(target_type="panel").exists()


def test_an_unnamed_lens_is_refused_in_the_references_words(admin_client_ada, lenses):
    # Only a raw update can store a blank name; the panel form still refuses it.
    Lens.objects.filter(pk=lenses[0].pk).update(name="   ")
    response = admin_client_ada.post(
        add_url("panel"),
        panel_form_data(name="p", need=1, lenses=[Lens.objects.get(pk=lenses[0].pk)]),
    )
    _refused(response, str(quorum.UnnamedLens()))
    assert not Panel.objects.exists()


def test_a_panel_without_lenses_is_unreachable(admin_client_ada):
    response = admin_client_ada.post(add_url("panel"), panel_form_data(name="p", need=1))
    _refused(response, str(quorum.Unreachable(1, 0)))


def test_a_refused_change_leaves_the_stored_panel_untouched(admin_client_ada, lenses):
    panel = PanelFactory(name="p", need=2, lenses=lenses[:3])
    response = admin_client_ada.post(
        change_url("panel", panel.pk),
        panel_form_data(name="renamed", need=1, lenses=lenses[:2], panel=panel),
    )
    _refused(response, str(quorum.NotAMajority(1, 2)))
    panel.refresh_from_db()
    assert panel.name == "p" and panel.need == 2 and panel.version == 1
    assert [lens.name for lens in panel.ordered_lenses()] == ["accuracy", "policy", "tone"]


def test_a_valid_panel_is_saved_with_its_lenses_in_position_order(admin_client_ada, lenses):
    checker = CheckerFactory(name="has-text")
    response = admin_client_ada.post(
        add_url("panel"),
        panel_form_data(
            name="release",
            need=2,
            lenses=lenses,
            positions=[20, 10, 30],
            checkers=[checker],
            requires_sign_off=True,
            grounding_policy="repair",
            external_deadline_seconds=600,
        ),
    )
    assert response.status_code == 302, errors_of(response)
    panel = Panel.objects.get(name="release")
    assert [lens.name for lens in panel.ordered_lenses()] == ["policy", "accuracy", "tone"]
    assert list(panel.panel_lenses.values_list("position", flat=True)) == [0, 1, 2]
    assert list(panel.checkers.all()) == [checker]
    assert panel.requires_sign_off and panel.grounding_policy == "repair"
    assert panel.external_deadline_seconds == 600
    assert panel.version == 1


def test_every_saved_change_bumps_the_panel_version_and_a_noop_save_does_not(
    admin_client_ada, lenses
):
    panel = PanelFactory(name="p", need=2, lenses=lenses[:3])
    url = change_url("panel", panel.pk)

    same = panel_form_data(name="p", need=2, lenses=lenses[:3], panel=panel)
    assert admin_client_ada.post(url, same).status_code == 302
    panel.refresh_from_db()
    assert panel.version == 1

    reordered = panel_form_data(name="p", need=2, lenses=lenses[::-1], panel=panel)
    assert admin_client_ada.post(url, reordered).status_code == 302
    panel.refresh_from_db()
    assert panel.version == 2
    assert [lens.name for lens in panel.ordered_lenses()] == ["tone", "policy", "accuracy"]

    unanimity = panel_form_data(name="p", need=3, lenses=lenses[::-1], panel=panel)
    assert admin_client_ada.post(url, unanimity).status_code == 302
    panel.refresh_from_db()
    assert panel.version == 3 and panel.need == 3

    signoff = panel_form_data(
        name="p", need=3, lenses=lenses[::-1], panel=panel, requires_sign_off=True
    )
    assert admin_client_ada.post(url, signoff).status_code == 302
    panel.refresh_from_db()
    assert panel.version == 4


def test_historical_proposals_keep_and_show_the_configuration_they_were_judged_with(
    admin_client_ada,
):
    content = "The sum is 4."
    a, b = LensFactory(name="accuracy"), LensFactory(name="policy")
    for lens in (a, b):
        recorded(lens, content, judgement("pass", "The sum is 4."))
    panel = PanelFactory(name="p", need=1, lenses=[a])
    old = evaluate_in_process(submit(panel, content))
    assert old.panel_version == 1

    response = admin_client_ada.post(
        change_url("panel", panel.pk), panel_form_data(name="p", need=2, lenses=[a, b], panel=panel)
    )
    assert response.status_code == 302, errors_of(response)
    panel.refresh_from_db()
    assert panel.version == 2
    new = evaluate_in_process(submit(panel, content))

    old.refresh_from_db()
    assert old.panel_version == 1 and old.panel_snapshot["need"] == 1
    assert [e["name"] for e in old.panel_snapshot["lenses"]] == ["accuracy"]
    assert new.panel_version == 2 and new.panel_snapshot["need"] == 2

    page = admin_client_ada.get(change_url("panel", panel.pk)).content.decode()
    assert "<td>v1</td>" in page and "<td>v2</td>" in page
    assert "accuracy v1, policy v1" in page


def test_deleting_a_lens_used_by_a_panel_is_refused_naming_the_panel(admin_client_ada, lenses):
    PanelFactory(name="release-gate", need=1, lenses=[lenses[0]])
    url = f"/admin/review/lens/{lenses[0].pk}/delete/"
    response = admin_client_ada.post(url, {"post": "yes"}, follow=True)
    text = response.content.decode()
    assert "release-gate" in text and "Cannot delete" in text
    assert Lens.objects.filter(pk=lenses[0].pk).exists()


def test_bulk_deleting_a_used_lens_is_refused_naming_the_panel(admin_client_ada, lenses):
    PanelFactory(name="release-gate", need=1, lenses=[lenses[0]])
    response = admin_client_ada.post(
        "/admin/review/lens/",
        {
            "action": "delete_selected",
            "_selected_action": [lenses[0].pk, lenses[1].pk],
            "post": "yes",
        },
        follow=True,
    )
    text = response.content.decode()
    assert "release-gate" in text and "Cannot delete" in text
    assert Lens.objects.count() == 3


def test_an_unused_lens_can_be_deleted_and_the_delete_is_audited(admin_client_ada, lenses):
    url = f"/admin/review/lens/{lenses[2].pk}/delete/"
    response = admin_client_ada.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert not Lens.objects.filter(name="tone").exists()
    entry = AuditEntry.objects.get(target_type="lens", action="delete")
    assert entry.target_repr == "tone" and entry.changes["name"] == {"old": "tone", "new": None}


def test_the_panel_change_page_renders_with_its_inline(admin_client_ada, lenses):
    panel = PanelFactory(name="p", need=2, lenses=lenses[:3])
    page = admin_client_ada.get(change_url("panel", panel.pk))
    assert page.status_code == 200
    assert 'name="panel_lenses-TOTAL_FORMS"' in page.content.decode()
    assert admin_client_ada.get(add_url("panel")).status_code == 200
    assert admin_client_ada.get("/admin/review/panel/").status_code == 200


VALIDATE = "/admin/review/panel/validate/"


def test_a_quorum_refusal_is_shown_once(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"), panel_form_data(name="p", need=3, lenses=lenses[:2])
    )
    message = str(quorum.Unreachable(3, 2))
    assert response.content.decode().count(message) == 1


def test_the_validate_endpoint_answers_what_save_would_refuse(admin_client_ada, lenses):
    data = panel_form_data(name="p", need=3, lenses=lenses[:2])
    html = admin_client_ada.post(VALIDATE, data).content.decode()
    assert "data-panel-refusal" in html and str(quorum.Unreachable(3, 2)) in html
    assert not Panel.objects.exists()  # asking saves nothing


def test_the_validate_endpoint_says_when_the_panel_is_fine(admin_client_ada, lenses):
    html = admin_client_ada.post(
        VALIDATE, panel_form_data(name="p", need=2, lenses=lenses)
    ).content.decode()
    assert "data-panel-ok" in html and "when 2 of its lenses agree" in html


def test_the_validate_endpoint_checks_a_change_against_that_panel(admin_client_ada, lenses):
    panel = PanelFactory(name="p", need=2, lenses=lenses[:3])
    data = panel_form_data(name="p", need=1, lenses=lenses[:3], panel=panel)
    html = admin_client_ada.post(VALIDATE, {**data, "panel_id": panel.pk}).content.decode()
    assert str(quorum.NotAMajority(1, 3)).replace("'", "&#x27;") in html
    panel.refresh_from_db()
    assert panel.need == 2


def test_the_validate_endpoint_needs_the_admin(client, lenses):
    response = client.post(VALIDATE, panel_form_data(name="p", need=2, lenses=lenses))
    assert response.status_code == 302 and "/login/" in response["Location"]


def _need_row(html: str) -> str:
    """The Need field's row: its label, its errors, its input and the live check under it."""
    start = html.index('<div class="form-row field-need">')
    return html[start : html.index('<div class="form-row field-active">', start)]


def test_a_need_refusal_sits_at_the_need_field_with_the_allowed_range(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"), panel_form_data(name="p", need=1, lenses=lenses[:3])
    )

    row = _need_row(response.content.decode())
    assert str(quorum.NotAMajority(1, 3)).replace("'", "&#x27;") in row
    assert "With 3 lenses the need must be 2 or 3." in row
    assert 'aria-invalid="true"' in row and 'class="flex-container errors"' in row
    assert 'id="panel-validation"' in row  # the live check answers here too
    assert "The need and these lenses make no quorum: see the Need field." in errors_of(response)
    assert not Panel.objects.exists()


def test_a_repeated_lens_is_refused_at_the_lens_rows_not_at_the_need(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"), panel_form_data(name="p", need=2, lenses=[lenses[0], lenses[0]])
    )

    row = _need_row(response.content.decode())
    assert "aria-invalid" not in row
    assert str(quorum.RepeatedLens("accuracy")).replace("'", "&#x27;") not in row
    _refused(response, str(quorum.RepeatedLens("accuracy")))


def test_the_validate_endpoint_gives_the_allowed_range_without_the_pointer(
    admin_client_ada, lenses
):
    refused = admin_client_ada.post(
        VALIDATE, panel_form_data(name="p", need=3, lenses=lenses[:2])
    ).content.decode()
    fine = admin_client_ada.post(
        VALIDATE, panel_form_data(name="p", need=2, lenses=lenses)
    ).content.decode()

    assert "With 2 lenses the need must be 2." in refused
    assert "see the Need field" not in refused
    assert "With 3 lenses the need must be 2 or 3." in fine


def test_the_admin_sets_how_many_reviews_an_escalation_needs(admin_client_ada, lenses):
    admin_client_ada.post(
        add_url("panel"),
        panel_form_data(name="money", need=1, lenses=lenses[:1], reviews_needed=2),
    )

    assert Panel.objects.get(name="money").reviews_needed == 2


def test_the_admin_refuses_more_than_five_reviews(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"),
        panel_form_data(name="money", need=1, lenses=lenses[:1], reviews_needed=6),
    )

    assert "less than or equal to 5" in errors_of(response)
    assert not Panel.objects.filter(name="money").exists()


def test_a_review_deadline_is_set_in_the_admin(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"),
        panel_form_data(
            name="p", need=1, lenses=lenses[:1], review_deadline="4:00:00",
            deadline_reminder="0:30:00", notify_with_text=True,
        ),
    )  # fmt: skip

    assert response.status_code == 302, errors_of(response)
    panel = Panel.objects.get(name="p")
    assert panel.review_deadline.total_seconds() == 4 * 3600
    assert panel.on_deadline == "reject" and panel.notify_with_text


def test_approve_on_deadline_needs_the_admin_to_confirm_the_warning(admin_client_ada, lenses):
    data = panel_form_data(
        name="p", need=1, lenses=lenses[:1], review_deadline="4:00:00", on_deadline="approve"
    )

    refused = admin_client_ada.post(add_url("panel"), data)

    assert "lets work through that no person and no passing panel approved" in errors_of(refused)
    assert not Panel.objects.exists()
    confirmed = admin_client_ada.post(add_url("panel"), {**data, "confirm_approve_fallback": "on"})
    assert confirmed.status_code == 302, errors_of(confirmed)
    assert Panel.objects.get(name="p").on_deadline == "approve"


def test_a_reminder_must_come_before_the_deadline(admin_client_ada, lenses):
    response = admin_client_ada.post(
        add_url("panel"),
        panel_form_data(
            name="p", need=1, lenses=lenses[:1], review_deadline="1:00:00",
            deadline_reminder="2:00:00",
        ),
    )  # fmt: skip

    _refused(response, "The reminder must come before the deadline")
