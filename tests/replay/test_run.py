"""Running a replay against a real loopback OpenAI-compatible server, in process and in workers."""

import time

import pytest

from reviewapp.guarantee.models import PatternEvidence
from reviewapp.ledger.models import LedgerEntry
from reviewapp.replay.models import Replay, ReplayCase
from reviewapp.replay.services import replay_cancel, replay_plan, replay_start
from reviewapp.review.models import Decision, Escalation, Judgement, LensFailure
from reviewapp.review.services.escalations import escalation_decide
from tests.conftest import wait_for
from tests.core.openai_stub import Answer, Slow
from tests.factories import PanelFactory
from tests.replay.builders import CITE, human_decided, llm_lens, run_in_process, split_panel
from tests.review.helpers import evaluate_in_process, judgement, submit

pytestmark = pytest.mark.django_db(transaction=True)


def _draft_with_a_new_llm_lens(server, outcomes):
    """Split proposals decided by people as `outcomes` say; the draft adds an LLM lens, need 2."""
    panel = split_panel()
    for n, outcome in enumerate(outcomes):
        human_decided(panel, n, outcome)
    accuracy, tone = panel.ordered_lenses()
    return replay_plan(panel=panel, members=[accuracy, tone, llm_lens(server)], need=2)


def _written():
    return (
        Judgement.objects.count(),
        Decision.objects.count(),
        Escalation.objects.count(),
        LensFailure.objects.count(),
        LedgerEntry.objects.count(),
    )


def test_a_replay_runs_the_new_lens_for_real_and_counts_both_sides(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    replay = _draft_with_a_new_llm_lens(openai_server, ["approved", "rejected", "rejected"])
    before = _written()
    replay_start(replay=replay)

    run_in_process(replay.pk)

    replay.refresh_from_db()
    assert replay.status == Replay.Status.DONE
    assert len(openai_server.requests) == replay.planned_calls == 3
    rejected = sorted(
        replay.cases.filter(human_outcome="rejected").values_list("proposal_id", flat=True)
    )
    # Today every split escalates; with the new lens passing, the draft approves all three,
    # two of them against the reviewer's rejection.
    assert replay.result["current"] == {
        "approved": 0,
        "rejected": 0,
        "automatic": 0,
        "escalated": 3,
        "contradictions": [],
    }
    assert replay.result["draft"] == {
        "approved": 3,
        "rejected": 0,
        "automatic": 3,
        "escalated": 0,
        "contradictions": rejected,
    }
    case = replay.cases.filter(human_outcome="approved").get()
    assert case.draft_verdicts == {
        "accuracy": {"verdict": "pass", "reused": True},
        "tone": {"verdict": "fail", "reused": True},
        "llm-fresh": {"verdict": "pass", "reused": False},
    }
    assert _written() == before  # no judgement, decision, escalation, failure or ledger entry


def test_a_replay_shows_the_drafts_would_be_evidence_and_never_counts_it(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    replay = _draft_with_a_new_llm_lens(openai_server, ["approved", "rejected", "rejected"])
    replay_start(replay=replay)

    run_in_process(replay.pk)

    replay.refresh_from_db()
    # All three approved by 2 passes against 1 fail; the reviewer approved one of them.
    [row] = replay.result["evidence"]
    assert row["pattern"] == "approved:2p1f0m:unchecked"
    assert (row["labels"], row["agreed"]) == (3, 1)
    assert 0 <= row["lower_bound"] < 1 / 3
    assert not PatternEvidence.objects.exists()


def test_a_replay_delivered_twice_runs_each_proposal_once(openai_server):
    openai_server.respond = lambda request: Answer(judgement("fail", CITE))
    replay = _draft_with_a_new_llm_lens(openai_server, ["rejected", "rejected"])
    replay_start(replay=replay)
    run_in_process(replay.pk)
    run_in_process(replay.pk)  # a late second delivery: the replay is done, nothing runs
    assert len(openai_server.requests) == 2
    replay.refresh_from_db()
    assert replay.result["draft"]["rejected"] == 2 and replay.result["replayed"] == 2


def test_a_lens_that_fails_in_the_replay_is_a_missing_judgement(openai_server):
    openai_server.respond = lambda request: Answer("not json at all")
    replay = _draft_with_a_new_llm_lens(openai_server, ["approved"])
    replay_start(replay=replay)
    run_in_process(replay.pk)
    case = ReplayCase.objects.get(replay=replay)
    assert case.draft_verdicts["llm-fresh"]["verdict"].startswith("failed: ")
    assert case.draft_outcome == "escalated"


def test_cancelling_a_running_replay_stops_it_and_keeps_what_finished(openai_server):
    # The first call answers at once, the rest hang well past the test.
    answered = []

    def respond(request):
        if not answered:
            answered.append(1)
            return Answer(judgement("pass", CITE))
        return Slow(30, judgement("pass", CITE))

    openai_server.respond = respond
    replay = _draft_with_a_new_llm_lens(openai_server, ["approved"] * 4)
    replay_start(replay=replay)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_in_process, replay.pk, 60)
        wait_for(lambda: ReplayCase.objects.filter(replay=replay, done_at__isnull=False).exists())
        wait_for(lambda: len(openai_server.requests) == 4)
        started = time.monotonic()
        assert replay_cancel(replay=replay)
        running.result(timeout=20)
    assert time.monotonic() - started < 10  # the hanging calls were abandoned
    replay.refresh_from_db()
    assert replay.status == Replay.Status.CANCELLED
    assert replay.result["replayed"] == 1 and replay.result["draft"]["approved"] == 1


@pytest.mark.worker
def test_a_worker_killed_mid_replay_is_replaced_and_the_replay_resumes_counting_each_once(
    start_worker, openai_server
):
    calls = []

    def respond(request):
        calls.append(request)
        # The first few answer quickly; then a long wait, during which the worker dies.
        return (
            Answer(judgement("pass", CITE))
            if len(calls) <= 3
            else Slow(2.0, judgement("pass", CITE))
        )

    openai_server.respond = respond
    replay = _draft_with_a_new_llm_lens(openai_server, ["approved"] * 6)
    sweeping = {"REVIEWAPP_STUCK_AFTER_SECONDS": "3", "REVIEWAPP_SWEEP_EVERY_SECONDS": "1"}
    doomed = start_worker(extra_env=sweeping)
    replay_start(replay=replay)
    wait_for(
        lambda: ReplayCase.objects.filter(replay=replay, done_at__isnull=False).count() >= 3,
        timeout=60,
        message=doomed.log(),
    )
    assert Replay.objects.get(pk=replay.pk).status == Replay.Status.RUNNING
    doomed.kill()  # SIGKILL mid-call: the open cases' answers never come
    finished_before = ReplayCase.objects.filter(replay=replay, done_at__isnull=False).count()
    assert finished_before < 6

    replacement = start_worker(beat=True, extra_env=sweeping)
    wait_for(
        lambda: Replay.objects.get(pk=replay.pk).status == Replay.Status.DONE,
        timeout=90,
        message=replacement.log(),
    )
    replay.refresh_from_db()
    assert replay.result["replayed"] == 6 and replay.result["draft"]["approved"] == 6
    assert ReplayCase.objects.filter(replay=replay, done_at__isnull=False).count() == 6
    # The cases finished before the kill were not asked again.
    assert len(calls) <= 6 + (6 - finished_before)


def test_a_changed_lens_runs_with_the_drafts_endpoint_and_instructions(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    # Today the LLM lens points nowhere: every proposal escalated with it failed.
    dead = llm_lens(openai_server, name="accuracy", base_url="http://127.0.0.1:9/v1")
    tone = llm_lens(openai_server, name="tone", base_url="http://127.0.0.1:9/v1")
    panel = PanelFactory(lenses=[dead, tone], need=2, grounding_policy="repair")
    proposal = submit(panel, f"{CITE} Case one.")
    evaluate_in_process(proposal)
    escalation_decide(
        escalation_id=Escalation.objects.get(proposal=proposal).pk,
        outcome="approved",
        rationale="Fine.",
        decided_by_name="rita",
    )
    replay = replay_plan(
        panel=panel,
        lens_changes={
            dead.pk: {"base_url": openai_server.base_url, "instructions": "Stricter than before."},
            tone.pk: {"base_url": openai_server.base_url},
        },
    )
    assert replay.planned_calls == 2
    replay_start(replay=replay)
    run_in_process(replay.pk)
    asked = [r.body["messages"][0]["content"] for r in openai_server.requests]
    assert len(asked) == 2 and sum("Stricter than before." in text for text in asked) == 1
    replay.refresh_from_db()
    assert replay.result["current"]["escalated"] == 1
    assert replay.result["draft"] == {
        "approved": 1,
        "rejected": 0,
        "automatic": 1,
        "escalated": 0,
        "contradictions": [],
    }
    dead.refresh_from_db()
    assert dead.base_url == "http://127.0.0.1:9/v1" and dead.instructions != "Stricter than before."
