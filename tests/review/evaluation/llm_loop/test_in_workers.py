"""LLM lenses on each worker process's event loop, against a real loopback server."""

import time

import pytest

from reviewapp.review.models import Decision, Escalation, Judgement, Lens, LensFailure, Proposal
from tests.conftest import wait_for
from tests.core.openai_stub import Answer, RateLimited, Slow
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import judgement, submit

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CITE = "The migration is reversible"


def _content(n: int) -> str:
    return f"{CITE} and takes under a minute. Proposal {n}."


def _llm_panel(server, *, lenses=1, need=None, **lens_fields):
    made = [
        LensFactory(
            backend=Lens.Backend.LLM,
            base_url=server.base_url,
            model="m",
            timeout_seconds=30,
            **lens_fields,
        )
        for _ in range(lenses)
    ]
    return PanelFactory(lenses=made, need=need or lenses)


def _all_final(ids):
    return Proposal.objects.filter(pk__in=ids).exclude(
        status__in=[Proposal.Status.QUEUED, Proposal.Status.EVALUATING]
    ).count() == len(ids)


def _one_process_worker(start_worker, **env):
    """A prefork worker with a single pool process: one slot, one event loop."""
    return start_worker(concurrency=1, extra_env=env)


def test_calls_of_different_proposals_overlap_in_one_worker_process(start_worker, openai_server):
    # Calls long enough that eight submissions land while the first is still in
    # flight, on a loaded machine and the embedded broker's polling alike.
    openai_server.respond = lambda request: Slow(3.0, judgement("pass", CITE))
    panel = _llm_panel(openai_server)
    worker = _one_process_worker(start_worker)
    ids = [submit(panel, _content(n)).pk for n in range(8)]
    wait_for(lambda: _all_final(ids), timeout=60, message=worker.log())
    # One pool slot: yet most calls were in flight at once.
    assert openai_server.max_in_flight >= 6
    assert Decision.objects.filter(proposal_id__in=ids, outcome="approved").count() == 8
    assert Judgement.objects.filter(proposal_id__in=ids).count() == 8


def test_the_endpoint_limit_holds_across_two_worker_processes(start_worker, openai_server):
    openai_server.respond = lambda request: Slow(0.4, judgement("pass", CITE))
    panel = _llm_panel(openai_server, lenses=2, max_concurrent_calls=3)
    _one_process_worker(start_worker)
    _one_process_worker(start_worker)
    ids = [submit(panel, _content(n)).pk for n in range(8)]
    wait_for(lambda: _all_final(ids), timeout=90)
    assert openai_server.max_in_flight == 3
    # The calls waited their turn: none was given up on because of the limit.
    assert Decision.objects.filter(proposal_id__in=ids, outcome="approved").count() == 8
    assert not LensFailure.objects.filter(proposal_id__in=ids).exists()


def test_a_429s_retry_after_holds_the_endpoint_for_every_proposals_calls(
    start_worker, openai_server
):
    first, second = _content(1), _content(2)
    asked = []

    def respond(request):
        text = request.body["messages"][-1]["content"]
        asked.append(("a" if first in text else "b", time.monotonic()))
        if [who for who, _ in asked] == ["a"]:
            return RateLimited("2")
        return Answer(judgement("pass", CITE))

    openai_server.respond = respond
    panel = _llm_panel(openai_server, max_concurrent_calls=1)
    _one_process_worker(start_worker)
    a = submit(panel, first)
    wait_for(lambda: openai_server.requests, message="the first call never came")
    b = submit(panel, second)
    wait_for(lambda: _all_final([a.pk, b.pk]), timeout=60)
    # The second proposal's call waited out the first's Retry-After too, then
    # the calls went in the order they asked; the 429 cost no lens anything.
    assert [who for who, _ in asked] == ["a", "b", "a"]
    assert asked[1][1] - asked[0][1] >= 1.9
    assert Decision.objects.filter(proposal_id__in=[a.pk, b.pk], outcome="approved").count() == 2


def test_a_provider_capping_calls_in_flight_slows_the_panel_down_and_escalates_nothing(
    start_worker, openai_server
):
    # Two calls at once, 429 beyond: a limit the lenses (at 1,024) do not know.
    def respond(request):
        if openai_server.in_flight > 2:
            return RateLimited("1")
        return Slow(0.3, judgement("pass", CITE))

    openai_server.respond = respond
    panel = _llm_panel(openai_server, lenses=2)
    _one_process_worker(start_worker)
    _one_process_worker(start_worker)
    ids = [submit(panel, _content(n)).pk for n in range(8)]
    wait_for(lambda: _all_final(ids), timeout=90)
    assert Decision.objects.filter(proposal_id__in=ids, outcome="approved").count() == 8
    assert not LensFailure.objects.filter(proposal_id__in=ids).exists()
    assert len(openai_server.requests) > 16  # some calls were refused, and waited their turn


def test_a_provider_answering_only_429_escalates_at_the_lens_deadline_naming_the_429s(
    start_worker, openai_server
):
    openai_server.respond = lambda request: RateLimited("1")
    panel = _llm_panel(openai_server, deadline_seconds=10)
    _one_process_worker(start_worker)
    proposal = submit(panel, _content(1))
    failure = wait_for(lambda: LensFailure.objects.filter(proposal=proposal).first(), timeout=30)
    assert f"the provider at {openai_server.base_url} answered 429 for " in failure.error
    assert len(openai_server.requests) > 4  # more than the 4 transport attempts allow
    done = wait_for(lambda: _all_final([proposal.pk]) and Proposal.objects.get(pk=proposal.pk))
    assert done.status == Proposal.Status.ESCALATED
    assert Escalation.objects.filter(proposal=proposal).count() == 1


def test_an_unexpected_error_in_a_lens_call_ends_as_a_named_lens_failure(
    start_worker, openai_server
):
    # Issue 42: an error of no transport kind (aiohttp's ValueError, here for a key with a
    # stray newline in its variable; there, for a base URL carrying credentials) left the
    # proposal `evaluating` while the sweeper re-sent it every two minutes.
    panel = _llm_panel(openai_server, api_key_env="LLM_API_KEY_ISSUE42")
    worker = _one_process_worker(start_worker, LLM_API_KEY_ISSUE42="sk-test\nissue-42")
    proposal = submit(panel, _content(1))

    failure = wait_for(
        lambda: LensFailure.objects.filter(proposal=proposal).first(),
        timeout=30,
        message=worker.log(),
    )
    assert failure.kind == "internal_error"
    assert "ValueError" in failure.error
    assert "issue-42" not in failure.error
    done = wait_for(lambda: _all_final([proposal.pk]) and Proposal.objects.get(pk=proposal.pk))
    assert done.status == Proposal.Status.ESCALATED
    assert not openai_server.requests


def test_a_worker_killed_mid_call_still_ends_the_proposal_once(start_worker, openai_server):
    openai_server.script([Slow(30, judgement("pass", CITE))])
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    panel = _llm_panel(openai_server)
    sweeping = {"REVIEWAPP_STUCK_AFTER_SECONDS": "3", "REVIEWAPP_SWEEP_EVERY_SECONDS": "1"}
    doomed = start_worker(extra_env=sweeping)
    proposal = submit(panel, _content(1))
    wait_for(lambda: openai_server.requests, message="the lens never called the model")
    doomed.kill()  # SIGKILL mid-call: the task was acknowledged, the answer never came

    start_worker(beat=True, extra_env=sweeping)
    wait_for(lambda: _all_final([proposal.pk]), timeout=60)
    assert Decision.objects.filter(proposal=proposal).count() == 1
    assert not Escalation.objects.filter(proposal=proposal).exists()
    assert Judgement.objects.filter(proposal=proposal).count() == 1


def test_a_time_limit_reached_during_a_call_records_a_lens_failure_at_once(
    start_worker, openai_server
):
    openai_server.respond = lambda request: Slow(30, judgement("pass", CITE))
    panel = _llm_panel(openai_server)
    _one_process_worker(start_worker, REVIEWAPP_LLM_LENS_TIME_LIMIT="1.5")
    proposal = submit(panel, _content(1))
    failure = wait_for(lambda: LensFailure.objects.filter(proposal=proposal).first(), timeout=20)
    assert "time limit of 1.5s reached" in failure.error
    assert failure.error.count("transport calls") == 1  # said once, across the hand-off
    done = wait_for(lambda: _all_final([proposal.pk]) and Proposal.objects.get(pk=proposal.pk))
    assert done.status == Proposal.Status.ESCALATED


def test_a_worker_stopped_warmly_mid_call_lets_the_call_finish_and_sends_its_answers(
    start_worker, openai_server
):
    openai_server.respond = lambda request: Slow(2.0, judgement("pass", CITE))
    panel = _llm_panel(openai_server)
    stopping = _one_process_worker(start_worker)
    proposal = submit(panel, _content(1))
    wait_for(lambda: openai_server.requests, message="the lens never called the model")
    stopping.stop()  # SIGTERM mid-call

    # No sweeper: only the answers the stopping worker sent can end the proposal.
    _one_process_worker(start_worker)
    wait_for(lambda: _all_final([proposal.pk]), timeout=30)
    assert len(openai_server.requests) == 1
    assert Decision.objects.filter(proposal=proposal, outcome="approved").count() == 1
