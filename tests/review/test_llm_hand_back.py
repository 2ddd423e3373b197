"""An LLM proposal's answers go back to its process's main thread, or onto the queue.

In process, on a real ``llm_loop._Runtime`` (its loop thread, its HTTP
session) against the loopback server: what happens to the answers depends on
whether the main thread is running a task when they arrive.
"""

import asyncio
import threading
import time

import pytest

from reviewapp.core.cite import GroundingPolicy
from reviewapp.review import llm_loop
from reviewapp.review.models import Lens
from tests.conftest import wait_for
from tests.core.openai_stub import Answer
from tests.factories import LensFactory
from tests.review.helpers import judgement

pytestmark = pytest.mark.django_db

CONTENT = "The migration is reversible and takes under a minute."
CITE = "The migration is reversible"


@pytest.fixture
def runtime():
    made = llm_loop._Runtime()
    yield made

    async def close():
        for session in made.sessions.values():
            await session.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    asyncio.run_coroutine_threadsafe(close(), made.loop).result(5)
    made.loop.call_soon_threadsafe(made.loop.stop)


@pytest.fixture
def lens(openai_server):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    return LensFactory(
        backend=Lens.Backend.LLM, base_url=openai_server.base_url, model="m", timeout_seconds=5
    )


class Outcomes:
    """Where each job's answers went: recorded here (and on which thread), or sent on."""

    def __init__(self) -> None:
        self.here: list[tuple[threading.Thread, int, list[dict]]] = []
        self.sent: list[tuple[int, list[dict]]] = []

    def job(self, lens, proposal_id=1, finish_here=None) -> llm_loop.LlmJob:
        def here(answers):
            self.here.append((threading.current_thread(), proposal_id, answers))

        return llm_loop.LlmJob(
            proposal_id=proposal_id,
            content=CONTENT,
            thought_process="",
            policy=GroundingPolicy.REJECT,
            lenses=[lens],
            finish_here=finish_here or here,
            deliver=lambda answers: self.sent.append((proposal_id, answers)),
        )


def _judge(runtime, *jobs):
    async def all_of():
        await asyncio.gather(*(runtime.judge_job(job) for job in jobs))

    asyncio.run_coroutine_threadsafe(all_of(), runtime.loop).result(10)


def test_answers_arriving_during_a_task_are_recorded_by_the_main_thread_when_it_ends(runtime, lens):
    outcomes = Outcomes()
    runtime.main_thread_busy()
    _judge(runtime, outcomes.job(lens))
    assert outcomes.here == [] and outcomes.sent == []  # waiting for the task to end
    runtime.main_thread_free()
    [(thread, proposal_id, answers)] = outcomes.here
    assert thread is threading.current_thread()
    assert (proposal_id, answers[0]["verdict"]) == (1, "pass")
    assert outcomes.sent == []  # no second message for it


def test_each_task_that_ends_records_one_kept_answer_so_new_tasks_keep_flowing(runtime, lens):
    outcomes = Outcomes()
    runtime.main_thread_busy()
    _judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in (1, 2, 3)))
    runtime.main_thread_free()
    assert len(outcomes.here) == 1
    for _ in range(2):  # the next tasks, each followed by one more
        runtime.main_thread_busy()
        runtime.main_thread_free()
    assert sorted(n for _, n, _ in outcomes.here) == [1, 2, 3]
    assert outcomes.sent == []


def test_answers_kept_for_a_main_thread_that_stays_idle_go_onto_the_queue(runtime, lens):
    outcomes = Outcomes()
    runtime.main_thread_busy()
    _judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in (1, 2)))
    runtime.main_thread_free()  # records one; no task follows
    wait_for(lambda: len(outcomes.sent) == 1, timeout=5)
    assert len(outcomes.here) == 1
    assert {n for _, n, _ in outcomes.here} | {n for n, _ in outcomes.sent} == {1, 2}


def test_answers_arriving_while_the_main_thread_is_idle_go_onto_the_queue(runtime, lens):
    outcomes = Outcomes()
    _judge(runtime, outcomes.job(lens))
    wait_for(lambda: outcomes.sent, timeout=5)
    assert outcomes.here == []
    [(proposal_id, answers)] = outcomes.sent
    assert (proposal_id, answers[0]["verdict"]) == (1, "pass")


def test_answers_that_find_the_main_thread_between_tasks_wait_for_the_next_one(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(llm_loop, "HAND_BACK_WAIT_SECONDS", 0.3)
    outcomes = Outcomes()
    _judge(runtime, outcomes.job(lens))  # kept, though the main thread is idle
    runtime.main_thread_busy()  # the next task starts within the wait
    time.sleep(0.6)  # and outlasts it: the answers still wait for the task's end
    assert outcomes.sent == []
    runtime.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [1]
    assert outcomes.sent == []


def test_answers_beyond_the_backlog_go_onto_the_queue_for_another_process(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(llm_loop, "HAND_BACK_BACKLOG", 3)
    outcomes = Outcomes()
    runtime.main_thread_busy()
    _judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in range(5)))
    assert len(outcomes.sent) == 2
    for _ in range(3):
        runtime.main_thread_free()
        runtime.main_thread_busy()
    assert len(outcomes.here) == 3
    ids = {n for _, n, _ in outcomes.here} | {n for n, _ in outcomes.sent}
    assert ids == set(range(5))  # each proposal's answers went one way, once


def test_a_failed_recording_does_not_hold_up_the_answers_after_it(runtime, lens):
    outcomes = Outcomes()

    def broken(answers):
        raise RuntimeError("database went away")

    runtime.main_thread_busy()
    _judge(runtime, outcomes.job(lens, proposal_id=1, finish_here=broken))
    _judge(runtime, outcomes.job(lens, proposal_id=2))
    runtime.main_thread_free()
    runtime.main_thread_busy()
    runtime.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [2]
    assert outcomes.sent == []  # the failed one is the sweeper's, like a task that raised


def test_a_worker_shutting_down_sends_the_answers_it_kept_onto_the_queue(runtime, lens):
    outcomes = Outcomes()
    runtime.main_thread_busy()
    _judge(runtime, outcomes.job(lens))
    runtime.send_handed_back()  # the process is exiting: no task will end here again
    assert [n for n, _ in outcomes.sent] == [1]
    _judge(runtime, outcomes.job(lens, proposal_id=2))  # answers from now on are sent at once
    assert [n for n, _ in outcomes.sent] == [1, 2] and outcomes.here == []


def test_the_loop_never_sends_netrc_credentials(
    runtime, lens, openai_server, tmp_path, monkeypatch
):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password hunter2\n")
    monkeypatch.setenv("NETRC", str(netrc))
    _judge(runtime, Outcomes().job(lens))
    assert openai_server.requests[0].authorization is None


def test_the_loop_sends_calls_through_the_proxy_the_environment_names(
    runtime, openai_server, monkeypatch
):
    openai_server.respond = lambda request: Answer(judgement("pass", CITE))
    proxy = openai_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "")
    lens = LensFactory(
        backend=Lens.Backend.LLM, base_url="http://llm.example.invalid/v1", model="m"
    )
    outcomes = Outcomes()
    _judge(runtime, outcomes.job(lens))
    assert openai_server.requests[0].path == "http://llm.example.invalid/v1/chat/completions"
    [(_, answers)] = wait_for(lambda: outcomes.sent, timeout=5)
    assert answers[0]["verdict"] == "pass"


def test_no_proxy_keeps_an_endpoint_off_the_proxy(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "llm.internal")
    assert llm_loop.env_proxy("https://llm.internal/v1") == (None, None)
    proxy, _ = llm_loop.env_proxy("https://api.example.com/v1")
    assert str(proxy) == "http://proxy.internal:3128"


def test_the_loop_is_uvloops(runtime):
    import uvloop  # a dependency wherever it is built (not on Windows)

    assert isinstance(runtime.loop, uvloop.Loop)
