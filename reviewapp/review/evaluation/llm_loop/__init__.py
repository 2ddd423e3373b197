"""Judging LLM lenses without a worker slot waiting on a model.

Design (see docs/operators.md, "The pipeline: what a worker does with a submission"):

- Every worker process that runs tasks owns one event loop, on a thread of
  its own, started the first time the process needs it (``process.Runtime``).
  A proposal's task (``evaluate_proposal``) runs its CPU lenses inline; if
  LLM lenses are left it hands them to this loop (``judge_in_background``)
  and returns, so its pool slot is free for the next task at once. No queue
  or worker exists only to wait on models: every pool process has its loop.
- On the loop every LLM lens of every proposal in the process is judged at
  once, on one ``aiohttp.ClientSession`` per endpoint (built once per
  process, not per call), each call taking a slot of its endpoint's shared limit
  (``endpoint_limits``) only while its HTTP exchange runs. A 429 or a 5xx
  gives the slot back and the retry is deferred on the loop, not slept.
- When a proposal's LLM lenses have answered, their answers are recorded and
  the final step run in the process that judged them, with no second message
  (publishing and running one cost about a sixth of the LLM path's worker
  CPU). They are kept for the process's main thread, which records them when
  its task ends (``task_postrun``), before it takes another, for as long as
  no task waits in the queue (``queue_peek``). A waiting task goes first: it
  is most often a new proposal's first task, which starts LLM calls, and the
  final steps still to run then hide their latency. (Measured: recording one
  kept answer per task end instead, the first tasks of a burst's last
  seconds waited 1.4-1.6 s in the queue behind final steps, and the burst
  ended a model latency after that.)
- A main thread left idle (HAND_BACK_WAIT_SECONDS with no task, none waiting)
  has its kept answers recorded on a recorder thread instead, one after
  another, while it stays idle (one the recorder has begun runs on into the
  next task). Only then: recording there while the main thread runs tasks
  competes for the GIL (measured: tasks took 40-120 ms instead of 8-25), and
  would tie database work to whichever process judged the proposal while
  that process took new tasks. Answers go onto the queue as one more
  ``evaluate_proposal`` task, at the lowest priority (so behind first tasks),
  for whichever pool slot is free, only when ``HAND_BACK_BACKLOG`` already
  wait, when whoever is recording (the main thread in a task, or the
  recorder) has recorded nothing for HAND_BACK_STALL_SECONDS (a slow
  checker), or when the process exits. A warm exit waits for those sends and
  the recorder's answer in hand, as for the loop's calls. All of this is
  ``hand_back``.
- The loop touches the database only on one thread of its own (its
  heartbeat, the admin's trials, limits kept in the database), and the
  recorder on another (a final step can wait minutes on a command checker;
  the loop's thread must not), so they add two connections per process
  whatever the number of calls in flight.
- At most ``REVIEWAPP_LLM_PROPOSALS_PER_PROCESS`` proposals are on one loop;
  a task that would add one more waits for room (back-pressure on the broker,
  not an unbounded backlog in memory).
- The admin's trial of an LLM lens ("try this lens", ``audit.trials.run_trial``) is
  judged here too, on the same clients and gates.

While a proposal is on the loop its ``updated_at`` is refreshed, so the
sweeper does not re-enqueue calls that are merely waiting their turn. The
task was acknowledged when it handed the lenses over, so a SIGKILLed worker's
proposals stop being refreshed and the sweeper sends them again (the
proposal's lock keeps a late duplicate answer out). A worker shutting down
warmly lets its loop finish first, for a few seconds.
"""

import os
import threading

from celery.signals import task_postrun, task_prerun, worker_process_shutdown, worker_shutdown

from .answers import LlmJob, answer_json, answer_outcome
from .process import Runtime

__all__ = ["LlmJob", "answer_json", "answer_outcome", "judge_in_background", "runtime"]

# How long a worker shutting down warmly lets its loop finish (docker stops a
# container 10 s after SIGTERM); what is left is sent again by the sweeper.
DRAIN_SECONDS = 10.0

_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> Runtime:
    """This process's loop, started the first time it is needed."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = Runtime()
        return _runtime


def judge_in_background(job: LlmJob) -> None:
    """Hand a proposal's LLM lenses to this process's loop; returns without waiting on a model."""
    loop = runtime()
    # Called from a task: the first in this process started before its loop
    # did, so task_prerun could not say so.
    loop.hand_back.main_thread_busy()
    loop.start(loop.judge_job(job))


def _forget_runtime() -> None:
    # A forked child has no loop thread (and may have copied the lock held):
    # it starts its own when it needs one.
    global _runtime, _runtime_lock
    _runtime, _runtime_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_runtime)


@task_prerun.connect
def _main_thread_busy(**kwargs) -> None:
    if _runtime is not None:
        _runtime.hand_back.main_thread_busy()


@task_postrun.connect
def _main_thread_free(**kwargs) -> None:
    if _runtime is not None:
        _runtime.hand_back.main_thread_free()


@worker_process_shutdown.connect  # a prefork child exiting
@worker_shutdown.connect  # a solo or threads worker exiting
def _finish_before_exit(**kwargs) -> None:
    if _runtime is not None:
        # No task will end here again: what the main thread kept, and what
        # answers from now on, goes onto the queue; drain waits for the
        # loop's jobs, the sends and the recorder's last answer.
        _runtime.hand_back.close()
        _runtime.drain(timeout=DRAIN_SECONDS)
