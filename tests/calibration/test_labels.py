"""Human labels are written with each reviewer decision and audit verdict, and rebuilt alike."""

import pytest

from reviewapp.calibration.models import HumanLabel, LensAgreementDay, LensLabel, PairErrorDay
from reviewapp.calibration.queries import AUDIT, ESCALATION, Window, lens_figures
from reviewapp.calibration.services import labels_rebuild
from reviewapp.core.calibration import HumanTable
from tests.calibration.builders import adjudicated, panel_of

pytestmark = pytest.mark.django_db


def test_a_reviewer_decision_labels_each_lens_that_judged_the_proposal():
    panel, (a, b) = panel_of("alpha", "beta")
    proposal = adjudicated(panel, {a: "pass", b: "fail"}, "rejected")
    labels = {row.lens_id: row for row in LensLabel.objects.filter(proposal=proposal)}
    assert (labels[a.pk].passed, labels[a.pk].approved) == (True, False)
    assert (labels[b.pk].passed, labels[b.pk].approved) == (False, False)
    assert HumanLabel.objects.get(proposal=proposal).audit is False


def test_an_audit_verdict_counts_as_an_audit_apart_from_escalations():
    panel, (a,) = panel_of("alpha")
    adjudicated(panel, {a: "pass"}, "approved", audit=True)
    adjudicated(panel, {a: "pass"}, "approved")
    (figures,) = lens_figures(Window(), lens=a)
    assert (figures.by_kind[AUDIT].n, figures.by_kind[ESCALATION].n) == (1, 1)


def test_the_day_table_sums_the_cells_of_each_decision():
    panel, (a,) = panel_of("alpha")
    for verdict, outcome in [("pass", "approved"), ("pass", "approved"), ("fail", "approved")]:
        adjudicated(panel, {a: verdict}, outcome)
    (figures,) = lens_figures(Window(), lens=a)
    assert figures.by_kind[ESCALATION] == HumanTable(pass_approved=2, fail_approved=1)


def _state() -> tuple:
    def rows(model, *fields):
        return sorted(model.objects.values_list(*fields))

    return (
        rows(LensLabel, "lens_id", "proposal_id", "passed", "approved", "audit"),
        rows(
            LensAgreementDay,
            "lens_id",
            "day",
            "audit",
            "pass_approved",
            "pass_rejected",
            "fail_approved",
            "fail_rejected",
            "claims_marked",
            "claims_incorrect",
        ),
        rows(
            PairErrorDay,
            "panel_id",
            "first_id",
            "second_id",
            "day",
            "items",
            "first_wrong",
            "second_wrong",
            "both_wrong",
        ),
        rows(HumanLabel, "proposal_id", "approved", "audit", "machine_approved"),
    )


def test_rebuilding_from_the_decisions_gives_the_same_labels_and_sums():
    panel, (a, b, c) = panel_of("alpha", "beta", "gamma")
    adjudicated(
        panel,
        {a: "pass", b: "fail", c: "pass"},
        "rejected",
        audit=True,
        tally_outcome="reached_pass",
    )
    adjudicated(
        panel,
        {a: "fail", b: "fail", c: "pass"},
        "approved",
        marks={a: ["incorrect", "correct"], c: ["irrelevant"]},
    )
    before = _state()
    assert sum(row[7] for row in before[1]) == 3  # the marks are summed by the day rows
    assert len(before[2]) == 3  # three pairs, one day
    assert labels_rebuild() == 2
    assert _state() == before


@pytest.mark.parametrize(
    ("tally_outcome", "machine_approved"),
    [("reached_pass", True), ("reached_fail", False), ("no_quorum", None)],
)
def test_rebuilding_reads_what_the_machine_would_have_done_from_the_tally(
    tally_outcome, machine_approved
):
    panel, (a,) = panel_of("alpha")
    proposal = adjudicated(panel, {a: "pass"}, "rejected", tally_outcome=tally_outcome)
    assert labels_rebuild() == 1
    assert HumanLabel.objects.get(proposal=proposal).machine_approved is machine_approved


def test_a_system_decision_is_no_human_label():
    from reviewapp.review.models import Decision, Proposal
    from reviewapp.review.services.decisions import decision_append

    panel, (a,) = panel_of("alpha")
    proposal = Proposal.objects.create(
        panel=panel,
        panel_version=1,
        panel_snapshot={"name": panel.name, "version": 1, "need": 1, "lenses": []},
        content="x",
        content_sha256="0" * 64,
        request_sha256="0" * 64,
    )
    decision_append(
        proposal=proposal, outcome="approved", basis=Decision.Basis.SYSTEM, rationale="tally"
    )
    assert not HumanLabel.objects.exists()
