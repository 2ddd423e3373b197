"""An LLM proposal's answers are recorded in its process (main or recorder thread), or queued.

In process, on a real ``llm_loop.process.Runtime`` (its loop thread, its HTTP
session) against the loopback server and the real broker: what happens to the
answers depends on whether the main thread is running a task when they arrive,
and on whether a task waits in the queue.
"""

import threading
import time

import pytest

from reviewapp.celery import app as celery_app
from reviewapp.review.evaluation.llm_loop import hand_back
from reviewapp.review.evaluation.tasks import finalize_proposal
from tests.conftest import wait_for
from tests.review.evaluation.llm_loop.support import Outcomes, judge

pytestmark = pytest.mark.django_db(transaction=True)


def test_answers_arriving_during_a_task_are_recorded_by_the_main_thread_when_it_ends(runtime, lens):
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, outcomes.job(lens))
    assert outcomes.here == [] and outcomes.sent == []  # waiting for the task to end
    runtime.hand_back.main_thread_free()
    [(thread, proposal_id, answers)] = outcomes.here
    assert thread is threading.current_thread()
    assert (proposal_id, answers[0]["verdict"]) == (1, "pass")
    assert outcomes.sent == []  # no second message for it


def test_a_task_that_ends_with_no_task_waiting_records_every_answer_kept(runtime, lens):
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in (1, 2, 3)))
    runtime.hand_back.main_thread_free()
    assert sorted(n for _, n, _ in outcomes.here) == [1, 2, 3]
    assert outcomes.sent == []


def test_a_task_waiting_in_the_queue_goes_before_the_answers_kept(runtime, lens):
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, outcomes.job(lens))
    finalize_proposal.delay(0)  # another proposal's task, waiting for a pool slot
    runtime.hand_back.main_thread_free()
    assert outcomes.here == [] and outcomes.sent == []
    runtime.hand_back.main_thread_busy()  # the task it took
    celery_app.control.purge()  # (nothing else waits)
    runtime.hand_back.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [1]


def test_answers_kept_too_long_are_recorded_even_while_tasks_wait(runtime, lens, monkeypatch):
    monkeypatch.setattr(hand_back, "HAND_BACK_DEFER_SECONDS", 0.2)
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 60)
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, outcomes.job(lens))
    finalize_proposal.delay(0)
    time.sleep(0.3)
    runtime.hand_back.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [1]


def test_answers_arriving_while_the_main_thread_is_idle_are_recorded_on_the_recorder_thread(
    runtime, lens
):
    outcomes = Outcomes()
    judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in (1, 2)))
    wait_for(lambda: len(outcomes.here) == 2, timeout=5)
    assert {thread.name.split("_")[0] for thread, _, _ in outcomes.here} == {"llm-recorder"}
    assert outcomes.sent == []  # no message for them


def test_answers_for_an_idle_main_thread_wait_for_it_while_a_task_waits_in_the_queue(runtime, lens):
    outcomes = Outcomes()
    finalize_proposal.delay(0)  # on its way to this process's idle main thread
    judge(runtime, outcomes.job(lens))
    time.sleep(0.3)
    assert outcomes.here == [] and outcomes.sent == []
    runtime.hand_back.main_thread_busy()  # the task it took
    celery_app.control.purge()
    runtime.hand_back.main_thread_free()
    [(thread, _, _)] = outcomes.here
    assert thread is threading.current_thread()


def test_answers_that_find_the_main_thread_between_tasks_wait_for_the_next_one(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(hand_back, "HAND_BACK_WAIT_SECONDS", 0.3)
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 60)
    outcomes = Outcomes()
    judge(runtime, outcomes.job(lens))  # kept, though the main thread is idle
    runtime.hand_back.main_thread_busy()  # the next task starts within the wait
    time.sleep(0.4)  # and outlasts it: the answers still wait for the task's end
    assert outcomes.here == [] and outcomes.sent == []
    runtime.hand_back.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [1]
    assert outcomes.sent == []


def test_answers_kept_for_a_main_thread_stuck_in_a_long_task_go_onto_the_queue(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 0.2)
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()  # a slow checker, say
    judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in (1, 2)))
    wait_for(lambda: len(outcomes.sent) == 2, timeout=5)
    runtime.hand_back.main_thread_free()
    assert outcomes.here == []


def test_answers_kept_behind_a_recorder_stuck_on_a_long_final_step_go_onto_the_queue(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 0.2)
    outcomes = Outcomes()
    release = threading.Event()
    slow = []

    def first_slow(answers):
        if not slow:
            slow.append(answers)
            release.wait(10)  # a command checker taking its time

    # The main thread is idle: the recorder takes the first answer and stays on it.
    judge(runtime, *(outcomes.job(lens, proposal_id=n, finish_here=first_slow) for n in (1, 2, 3)))
    wait_for(lambda: len(outcomes.sent) == 2, timeout=5)
    release.set()
    assert len(slow) == 1


def test_a_warm_shutdown_waits_for_the_answer_the_recorder_is_recording(runtime, lens):
    outcomes = Outcomes()
    started = threading.Event()
    recorded = []

    def slow(answers):
        started.set()
        time.sleep(0.5)
        recorded.append(answers)

    judge(runtime, outcomes.job(lens, finish_here=slow))  # the main thread is idle
    assert started.wait(5)
    runtime.hand_back.close()
    runtime.drain(timeout=5)
    assert len(recorded) == 1


def test_a_main_thread_recording_kept_answers_is_not_taken_for_stuck(runtime, lens, monkeypatch):
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 60)
    outcomes = Outcomes()
    recorded = []

    def slow(answers):
        time.sleep(0.15)  # each answer well within the limit, all of them beyond it
        recorded.append(answers)

    runtime.hand_back.main_thread_busy()
    judge(runtime, *(outcomes.job(lens, proposal_id=n, finish_here=slow) for n in range(4)))
    monkeypatch.setattr(hand_back, "HAND_BACK_STALL_SECONDS", 0.2)
    runtime.hand_back.main_thread_busy()  # the next task, a short one
    runtime.hand_back.main_thread_free()
    assert len(recorded) == 4
    assert outcomes.sent == []


def test_answers_beyond_the_backlog_go_onto_the_queue_for_another_process(
    runtime, lens, monkeypatch
):
    monkeypatch.setattr(hand_back, "HAND_BACK_BACKLOG", 3)
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, *(outcomes.job(lens, proposal_id=n) for n in range(5)))
    wait_for(lambda: len(outcomes.sent) == 2, timeout=5)
    runtime.hand_back.main_thread_free()
    assert len(outcomes.here) == 3
    ids = {n for _, n, _ in outcomes.here} | {n for n, _ in outcomes.sent}
    assert ids == set(range(5))  # each proposal's answers went one way, once


def test_a_failed_recording_does_not_hold_up_the_answers_after_it(runtime, lens):
    outcomes = Outcomes()

    def broken(answers):
        raise RuntimeError("database went away")

    runtime.hand_back.main_thread_busy()
    judge(runtime, outcomes.job(lens, proposal_id=1, finish_here=broken))
    judge(runtime, outcomes.job(lens, proposal_id=2))
    runtime.hand_back.main_thread_free()
    assert [n for _, n, _ in outcomes.here] == [2]
    assert outcomes.sent == []  # the failed one is the sweeper's, like a task that raised


def test_a_worker_shutting_down_sends_the_answers_it_kept_onto_the_queue(runtime, lens):
    outcomes = Outcomes()
    runtime.hand_back.main_thread_busy()
    judge(runtime, outcomes.job(lens))
    runtime.hand_back.close()  # the process is exiting: no task will end here again
    assert [n for n, _ in outcomes.sent] == [1]
    judge(runtime, outcomes.job(lens, proposal_id=2))  # answers from now on are sent at once
    wait_for(lambda: len(outcomes.sent) == 2, timeout=5)
    assert [n for n, _ in outcomes.sent] == [1, 2] and outcomes.here == []
