"""Planning a replay: which proposals, both configurations, the calls it would make."""

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError

from reviewapp.audit.models import AuditEntry
from reviewapp.replay.models import RegressionCase, Replay, ReplayCase
from reviewapp.replay.services import regression_case_add, replay_cancel, replay_plan, replay_start
from reviewapp.review.models import Decision, Lens
from tests.factories import LensFactory, UserFactory
from tests.replay.builders import human_decided, split_panel
from tests.web.builders import judgement, run_panel

pytestmark = pytest.mark.django_db


def _llm(name="fresh", **fields):
    return LensFactory(
        name=name, backend=Lens.Backend.LLM, base_url="http://127.0.0.1:9/v1", model="m", **fields
    )


def test_a_plan_takes_the_panels_last_n_human_decisions_newest_first():
    panel = split_panel()
    made = [human_decided(panel, n, "approved") for n in range(4)]
    # Decided by the machines, not a person: not a case to learn from.
    run_panel(
        panel,
        "Both pass.",
        {"accuracy": judgement("pass", "Both pass."), "tone": judgement("pass", "Both pass.")},
    )
    replay = replay_plan(panel=panel, size=3)
    cases = list(replay.cases.values_list("proposal_id", flat=True))
    assert cases == [p.pk for p in reversed(made)][:3]
    assert replay.status == Replay.Status.PLANNED and replay.planned_calls == 0


def test_a_plan_counts_a_call_per_proposal_for_each_new_or_changed_llm_lens_only():
    panel = split_panel()
    for n in range(3):
        human_decided(panel, n, "rejected")
    accuracy, tone = panel.ordered_lenses()
    fresh = _llm()
    replay = replay_plan(panel=panel, members=[accuracy, tone, fresh], need=2)
    assert replay.planned_calls == 3  # the new LLM lens; the two recorded lenses reuse theirs
    lenses = {lens["name"]: lens for lens in replay.draft["lenses"]}
    assert lenses["fresh"]["new"] and not lenses["accuracy"]["changed"]
    assert replay.description == "adds fresh"


def test_changing_an_llm_lens_counts_its_calls_though_it_has_stored_answers():
    panel = split_panel()
    human_decided(panel, 1, "approved")
    accuracy, tone = panel.ordered_lenses()
    replay = replay_plan(
        panel=panel, lens_changes={accuracy.pk: {"instructions": "Stricter.", "model": ""}}
    )
    (draft_accuracy,) = [x for x in replay.draft["lenses"] if x["name"] == "accuracy"]
    assert draft_accuracy["changes"] == {
        "instructions": "Stricter."
    }  # an unchanged model is no change
    assert replay.description == "accuracy: instructions"
    accuracy.refresh_from_db()
    assert accuracy.instructions != "Stricter."  # the draft is never saved to the lens


def test_the_current_side_is_the_stored_judgements_under_the_current_panel():
    panel = split_panel()
    human_decided(panel, 1, "approved")
    replay = replay_plan(panel=panel)
    assert list(replay.cases.values_list("human_outcome", "current_outcome")) == [
        ("approved", "escalated")
    ]


def test_a_draft_the_quorum_refuses_is_refused_and_nothing_is_written():
    panel = split_panel()
    human_decided(panel, 1, "approved")
    with pytest.raises(ValidationError) as refused:
        replay_plan(panel=panel, need=1)
    assert "not a majority" in str(refused.value)
    assert not Replay.objects.exists() and not ReplayCase.objects.exists()


def test_a_panel_with_nothing_decided_by_a_person_has_nothing_to_replay():
    with pytest.raises(ValidationError, match="no decided proposals in human decisions"):
        replay_plan(panel=split_panel())


def test_the_regression_set_replays_only_its_own_proposals():
    panel = split_panel()
    kept, _other = human_decided(panel, 1, "approved"), human_decided(panel, 2, "rejected")
    regression_case_add(proposal=kept)
    regression_case_add(proposal=kept)  # again: still once
    replay = replay_plan(panel=panel, source=Replay.Source.REGRESSION)
    assert list(replay.cases.values_list("proposal_id", flat=True)) == [kept.pk]
    assert RegressionCase.objects.count() == 1


def test_an_undecided_proposal_cannot_join_the_regression_set():
    panel = split_panel()
    escalated = run_panel(
        panel,
        "Open case.",
        {"accuracy": judgement("pass", "Open case."), "tone": judgement("fail", "Open case.")},
    )
    with pytest.raises(ValidationError, match="has no decision yet"):
        regression_case_add(proposal=escalated)


def test_planning_starting_and_cancelling_are_audited(django_capture_on_commit_callbacks):
    panel = split_panel()
    human_decided(panel, 1, "approved")
    replay = replay_plan(panel=panel)
    with django_capture_on_commit_callbacks(execute=False) as enqueued:
        assert replay_start(replay=replay)
        assert not replay_start(replay=replay)  # a second click enqueues nothing
    assert len(enqueued) == 1
    assert replay_cancel(replay=replay) and not replay_cancel(replay=replay)
    notes = list(
        AuditEntry.objects.filter(target_type="replay", target_id=str(replay.pk))
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert notes == ["create", "trial", "update"]
    assert Replay.objects.get(pk=replay.pk).status == Replay.Status.CANCELLED
    assert Decision.objects.count() == 1  # the human's, and nothing more


def _planner(*, may_change_lenses: bool):
    user = UserFactory(is_staff=True)
    codenames = ["add_replay"] + (["change_lens"] if may_change_lenses else [])
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def test_drafting_a_new_endpoint_needs_the_right_to_change_lenses_as_it_receives_the_key():
    panel = split_panel()
    human_decided(panel, 1, "approved")
    accuracy, _ = panel.ordered_lenses()

    with pytest.raises(ValidationError, match="API key"):
        replay_plan(
            panel=panel,
            user=_planner(may_change_lenses=False),
            lens_changes={accuracy.pk: {"base_url": "https://elsewhere.example/v1"}},
        )
    assert not Replay.objects.exists()


def test_someone_who_may_change_lenses_may_draft_a_new_endpoint():
    panel = split_panel()
    human_decided(panel, 1, "approved")
    accuracy, _ = panel.ordered_lenses()

    replay = replay_plan(
        panel=panel,
        user=_planner(may_change_lenses=True),
        lens_changes={accuracy.pk: {"base_url": "https://elsewhere.example/v1"}},
    )

    (draft,) = [x for x in replay.draft["lenses"] if x["name"] == "accuracy"]
    assert draft["changes"] == {"base_url": "https://elsewhere.example/v1"}
