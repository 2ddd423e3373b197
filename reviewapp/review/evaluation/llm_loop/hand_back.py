"""Where and when a process records the answers its LLM loop kept (see the package's docstring).

When a proposal's LLM lenses have answered, the loop hands the answers here
(``HandBack.take``). They are recorded in this process: by its main thread
when its task ends, for as long as no task waits in the queue
(``queue_peek``); by the recorder thread while the main thread is idle; and
they go onto the queue only past a backlog, when whoever is recording is
stuck, or when the process exits.
"""

import asyncio
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures

from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError, close_old_connections, connection

from .. import queue_peek
from .answers import LlmJob

log = logging.getLogger(__name__)

# At most this many proposals' answers wait for the main thread; the next go
# on the queue, where another process can take them. Each costs a task there:
# at 32, 137-139 of a 300-proposal burst's answers did (llm_pipeline.py ratio
# 0.75, 0.77); at 128, none.
HAND_BACK_BACKLOG = 128
# How long the answers kept for the main thread give way to tasks waiting in
# the queue before they are recorded anyway (see main_thread_free): a bound
# for a queue that never empties, far beyond a burst's few seconds.
HAND_BACK_DEFER_SECONDS = 10.0
# How long answers kept for an idle main thread wait for it to start a task
# before the recorder thread records them (and how often it looks).
HAND_BACK_WAIT_SECONDS = 0.02
# How long answers kept for a main thread in a task wait for it to end or
# record one (a final step takes milliseconds; a slow checker, minutes).
HAND_BACK_STALL_SECONDS = 0.5


def dropping_broken_connection(fn, *args, **kwargs):
    """Call ``fn`` on a thread of the loop's with its own connection (database, recorder)."""
    try:
        return fn(*args, **kwargs)
    except DatabaseError:
        # A broken connection would fail every later call on this thread.
        connection.close()
        raise


def _gives_way(kept_at: float) -> bool:
    """Whether answers kept since `kept_at` wait for a task waiting in the queue to run first."""
    return time.monotonic() - kept_at < HAND_BACK_DEFER_SECONDS and queue_peek.task_waiting()


def _send(job: LlmJob, answers: list[dict]) -> None:
    try:
        job.deliver(answers)
    except Exception:  # the broker is down: the sweeper sends the proposal again
        log.exception("could not send proposal %s's LLM answers", job.proposal_id)


class HandBack:
    """The answers a process's loop kept, and the threads that record or send them."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # Records kept answers while the main thread is idle; its own connection.
        self._recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-recorder")
        # Broker sends, which block.
        self._io = ThreadPoolExecutor(max_workers=2, thread_name_prefix="llm-io")
        self._kept: deque[tuple[LlmJob, list[dict], float]] = deque()
        self._in_task = False
        # When the main thread last started or ended a task.
        self._state_since = time.monotonic()
        # Whether _watch is due on the loop.
        self._watching = False
        # Whether the recorder thread has been asked to record; since when
        # it has been recording its current answer.
        self._recorder_due = False
        self._recording_since: float | None = None
        self._closing = False
        self._lock = threading.Lock()
        # Work of the recorder and the broker sends, for wait() to wait on.
        self._side: set[Future] = set()
        self._side_lock = threading.Lock()

    def take(self, job: LlmJob, answers: list[dict]) -> None:
        """On the loop: keep a proposal's answers for the main thread, or send them on."""
        if not self._keep(job, answers):
            self._side_work(self._io, _send, job, answers)

    def _keep(self, job: LlmJob, answers: list[dict]) -> bool:
        """Keep the answers, unless enough already wait (or the process is exiting)."""
        with self._lock:
            if self._closing or len(self._kept) >= HAND_BACK_BACKLOG:
                return False
            self._kept.append((job, answers, time.monotonic()))
            start_watching = not self._watching
            self._watching = True
        if start_watching:
            self._loop.call_later(HAND_BACK_WAIT_SECONDS, self._watch)
        return True

    def _watch(self) -> None:
        """On the loop, every HAND_BACK_WAIT_SECONDS while answers are kept: see they are recorded.

        A main thread idle HAND_BACK_WAIT_SECONDS hands them to the recorder
        thread, which records them while it stays idle and no task waits in
        the queue to bring it back. If whoever is recording (the main thread
        in a task, or the recorder) has recorded nothing for
        HAND_BACK_STALL_SECONDS, it is in a long step (a slow checker's): the
        rest go onto the queue, for whichever pool slot is free.
        """
        with self._lock:
            if not self._kept:  # all recorded (or sent on)
                self._watching = False
                return
            now = time.monotonic()
            if self._recording_since is not None:
                stalled = now - self._recording_since >= HAND_BACK_STALL_SECONDS
            else:
                stalled = self._in_task and now - self._state_since >= HAND_BACK_STALL_SECONDS
            hand_to_recorder = (
                not stalled
                and not self._in_task
                and not self._recorder_due
                and now - self._state_since >= HAND_BACK_WAIT_SECONDS
            )
            if hand_to_recorder:
                self._recorder_due = True
        if stalled:
            self._send_kept()
        elif hand_to_recorder:
            self._side_work(self._recorder, self._record_while_idle)
        self._loop.call_later(HAND_BACK_WAIT_SECONDS, self._watch)

    def _record_while_idle(self) -> None:
        """On the recorder thread: record kept answers, oldest first, while the main thread is idle.

        It stops when the main thread starts a task (which records the rest
        when it ends) or a task waits in the queue to bring it back; one
        answer it has begun runs on into that task.
        """
        try:
            # The main thread's tasks close stale connections; nothing else does here.
            close_old_connections()
            while True:
                with self._lock:
                    oldest = self._kept[0][2] if self._kept else None
                if oldest is None or _gives_way(oldest):
                    return
                with self._lock:
                    if self._in_task or not self._kept:
                        return
                    job, answers, _ = self._kept.popleft()
                    self._recording_since = time.monotonic()
                try:
                    dropping_broken_connection(job.finish_here, answers)
                except Exception:
                    # As for a task that raised: the sweeper sends the proposal again.
                    log.exception("recording proposal %s's LLM answers failed", job.proposal_id)
                finally:
                    with self._lock:
                        self._recording_since = None
        finally:
            with self._lock:
                self._recorder_due = False

    def _send_kept(self) -> None:
        """Send every kept answer onto the queue (from the loop; the sends run off it)."""
        with self._lock:
            left = list(self._kept)
            self._kept.clear()
        for job, answers, _ in left:
            self._side_work(self._io, _send, job, answers)

    def _side_work(self, executor: ThreadPoolExecutor, fn, *args) -> None:
        """Run ``fn`` on the recorder or a sending thread; ``wait`` waits for it."""
        with self._side_lock:  # counted before it can start, so wait() never misses it
            future = executor.submit(fn, *args)
            self._side.add(future)
        future.add_done_callback(self._side_done)

    def _side_done(self, future: Future) -> None:
        with self._side_lock:
            self._side.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("LLM answers' work failed off the loop", exc_info=future.exception())

    def main_thread_busy(self) -> None:
        """The main thread started a task: answers kept for it wait until it ends."""
        with self._lock:
            self._in_task = True
            self._state_since = time.monotonic()

    def main_thread_free(self) -> None:
        """The main thread's task ended: record the answers kept for it, while no task waits.

        A task waiting in the queue (``queue_peek``) goes first, unless the
        oldest answer kept has waited HAND_BACK_DEFER_SECONDS: it is most
        often a new proposal's first task, which starts LLM calls, whose
        latency the final steps still to run then hide.
        """
        try:
            while True:
                with self._lock:
                    if not self._kept:
                        break
                    oldest = self._kept[0][2]
                if _gives_way(oldest):
                    break
                with self._lock:
                    if not self._kept:  # taken meanwhile (sent on, or by the recorder)
                        break
                    job, answers, _ = self._kept.popleft()
                    # Recording is progress: the rest are not sent on as if the task were stuck.
                    self._state_since = time.monotonic()
                try:
                    job.finish_here(answers)
                except SoftTimeLimitExceeded:
                    raise
                except Exception:
                    # As for a task that raised: the sweeper sends the proposal again.
                    log.exception("recording proposal %s's LLM answers failed", job.proposal_id)
        except SoftTimeLimitExceeded:
            # What is left waits for the next task's end, or the recorder.
            log.warning("time limit reached recording kept LLM answers")
        finally:
            with self._lock:
                self._in_task = False
                self._state_since = time.monotonic()

    def close(self) -> None:
        """Keep no more answers; send those kept onto the queue (the process is exiting).

        One the recorder has begun is finished there; ``wait`` waits for it
        and for these sends.
        """
        with self._lock:
            self._closing = True
            left = list(self._kept)
            self._kept.clear()
        for job, answers, _ in left:
            _send(job, answers)

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the recorder's answer in hand and the sends."""
        with self._side_lock:
            side = set(self._side)
        if side:
            wait_for_futures(side, timeout=max(0.0, timeout))
