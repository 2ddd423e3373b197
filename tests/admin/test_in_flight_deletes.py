"""Deleting a lens or checker an unfinished proposal still needs is refused, naming it."""

import pytest

from reviewapp.review.models import CheckerConfig, Lens, PanelLens
from reviewapp.review.services.proposals import proposal_submit
from tests.factories import CheckerFactory, LensFactory, PanelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def in_flight():
    """A queued proposal whose snapshot names `spare` and `probe`, both since removed."""
    spare, probe = LensFactory(name="spare"), CheckerFactory(name="probe")
    panel = PanelFactory(lenses=[LensFactory(), spare], need=2, checkers=[probe])
    proposal, _ = proposal_submit(panel_name=panel.name, content="Still being judged.")
    PanelLens.objects.filter(lens=spare).delete()
    panel.checkers.remove(probe)
    return {"lens": spare, "checker": probe, "proposal": proposal}


def test_deleting_a_lens_an_unfinished_proposal_needs_is_refused_naming_it(
    admin_client_ada, in_flight
):
    lens = in_flight["lens"]
    response = admin_client_ada.post(
        f"/admin/review/lens/{lens.pk}/delete/", {"post": "yes"}, follow=True
    )

    text = response.content.decode()
    assert "Cannot delete" in text and f"#{in_flight['proposal'].pk}" in text
    assert Lens.objects.filter(pk=lens.pk).exists()


def test_deleting_a_checker_an_unfinished_proposal_needs_is_refused_naming_it(
    admin_client_ada, in_flight
):
    checker = in_flight["checker"]
    response = admin_client_ada.post(
        "/admin/review/checkerconfig/",
        {"action": "delete_selected", "_selected_action": [checker.pk], "post": "yes"},
        follow=True,
    )

    text = response.content.decode()
    assert "Cannot delete" in text and f"#{in_flight['proposal'].pk}" in text
    assert CheckerConfig.objects.filter(pk=checker.pk).exists()


def test_once_the_proposal_is_final_the_lens_may_go(admin_client_ada, in_flight):
    type(in_flight["proposal"]).objects.filter(pk=in_flight["proposal"].pk).update(
        status="escalated"
    )
    lens = in_flight["lens"]

    response = admin_client_ada.post(f"/admin/review/lens/{lens.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Lens.objects.filter(pk=lens.pk).exists()
