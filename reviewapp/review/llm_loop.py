"""Judging LLM lenses without a worker slot waiting on a model.

Design (see README, "What happens to a submission"):

- Every worker process that runs tasks owns one event loop, on a thread of
  its own, started the first time the process needs it. A proposal's task
  (``evaluate_proposal``) runs its CPU lenses inline; if LLM lenses are left
  it hands them to this loop (``judge_in_background``) and returns, so its
  pool slot is free for the next task at once. No queue or worker exists
  only to wait on models: every pool process has its loop.
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
  the recorder's answer in hand, as for the loop's calls.
- The loop touches the database only on one thread of its own (its
  heartbeat, the admin's trials, limits kept in the database), and the
  recorder on another (a final step can wait minutes on a command checker;
  the loop's thread must not), so they add two connections per process
  whatever the number of calls in flight.
- At most ``REVIEWAPP_LLM_PROPOSALS_PER_PROCESS`` proposals are on one loop;
  a task that would add one more waits for room (back-pressure on the broker,
  not an unbounded backlog in memory).
- The admin's trial of an LLM lens ("try this lens", ``trial.run_trial``) is
  judged here too, on the same clients and gates.

While a proposal is on the loop its ``updated_at`` is refreshed, so the
sweeper does not re-enqueue calls that are merely waiting their turn. The
task was acknowledged when it handed the lenses over, so a SIGKILLed worker's
proposals stop being refreshed and the sweeper sends them again (the
proposal's lock keeps a late duplicate answer out). A worker shutting down
warmly lets its loop finish first, for a few seconds.
"""

import asyncio
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass
from functools import partial

import aiohttp

try:
    import resource
except ImportError:  # not on Windows
    resource = None
try:
    import uvloop
except ImportError:  # not built for this platform (Windows): asyncio's own loop
    uvloop = None
from aiohttp.helpers import get_env_proxy_for_url
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import task_postrun, task_prerun, worker_process_shutdown, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection
from django.utils import timezone
from yarl import URL

from reviewapp.core.cite import (
    AnswerBodyAnchor,
    GroundedClaim,
    GroundingPolicy,
    ThoughtWindowAnchor,
    UnresolvedCite,
)
from reviewapp.core.judging import JudgeOutcome, LensFailed
from reviewapp.core.llm_calls import AsyncChatTransport, EndpointGate, run_judge_async

from . import llm_keys, queue_peek
from .endpoint_limits import (
    LEASE_GRACE_SECONDS,
    DatabaseLimits,
    RedisLimits,
    endpoint_key,
    redis_url,
)
from .models import Lens, Proposal

log = logging.getLogger(__name__)

# How long a worker shutting down warmly lets its loop finish (docker stops a
# container 10 s after SIGTERM); what is left is sent again by the sweeper.
DRAIN_SECONDS = 10.0
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


@dataclass(frozen=True)
class LlmJob:
    """A proposal's LLM lenses to judge, and where their answers go."""

    proposal_id: int
    content: str
    thought_process: str
    policy: GroundingPolicy
    lenses: list[Lens]
    # Both take the proposal's answers as JSON (``answer_json``).
    # Records them here and now: called on the process's main thread between
    # tasks, or on the recorder thread while the main thread is idle.
    finish_here: Callable[[list[dict]], None]
    # Sends them on to be recorded by whichever process is free: called off the loop.
    deliver: Callable[[list[dict]], None]


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it exists (not on Windows): the same loop, for less CPU a call.

    Measured in llm_pipeline.py, six runs each: worker CPU per proposal over
    the recorded pipeline's 3.8 ms against 5.1 ms, ratio 0.76-0.97 (mean
    0.87) against 0.75-0.89 (mean 0.80).
    """
    if uvloop is None:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _allow_open_sockets() -> None:
    """Raise this process's soft limit on open files to its hard limit.

    Every call in flight holds a socket: up to the endpoint's limit (1,024 by
    default) or REVIEWAPP_LLM_PROPOSALS_PER_PROCESS times a panel's LLM
    lenses, past the soft limit of 1,024 that many systems start a process with.
    """
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # a hard limit the platform won't grant at once
            log.warning("could not raise the open-files limit from %s to %s", soft, hard)


def _gives_way(kept_at: float) -> bool:
    """Whether answers kept since `kept_at` wait for a task waiting in the queue to run first."""
    return time.monotonic() - kept_at < HAND_BACK_DEFER_SECONDS and queue_peek.task_waiting()


def _send(job: LlmJob, answers: list[dict]) -> None:
    try:
        job.deliver(answers)
    except Exception:  # the broker is down: the sweeper sends the proposal again
        log.exception("could not send proposal %s's LLM answers", job.proposal_id)


def _touch(proposal_ids: list[int]) -> None:
    Proposal.objects.filter(pk__in=proposal_ids).update(updated_at=timezone.now())


def _dropping_broken_connection(fn, *args, **kwargs):
    """Call ``fn`` on the loop's database thread or the recorder, each with its own connection."""
    try:
        return fn(*args, **kwargs)
    except DatabaseError:
        # A broken connection would fail every later call on this thread.
        connection.close()
        raise


class _Runtime:
    """This process's event loop, its database and recorder threads, its clients and gates."""

    def __init__(self) -> None:
        _allow_open_sockets()
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="llm-loop", daemon=True)
        self._thread.start()
        # One thread, so one database connection for the whole loop.
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-db")
        # Records kept answers while the main thread is idle; its own connection.
        self._recorder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-recorder")
        # Broker sends, which block.
        self._io = ThreadPoolExecutor(max_workers=2, thread_name_prefix="llm-io")
        # Redis limits are awaited on the loop itself; limits kept in the
        # database go through its thread.
        url = redis_url()
        self.limits = RedisLimits(url) if url else DatabaseLimits()
        self.sessions: dict[str, aiohttp.ClientSession] = {}
        self.proxies: dict[str, tuple[URL | None, aiohttp.BasicAuth | None]] = {}
        self.gates: dict[tuple[str, int, int, float], EndpointGate] = {}
        self.in_flight: Counter[int] = Counter()
        self._room = threading.BoundedSemaphore(settings.REVIEWAPP_LLM_PROPOSALS_PER_PROCESS)
        self._pending: set[Future] = set()
        self._pending_lock = threading.Lock()
        # Answers waiting for the main thread to finish its task (see the module's docstring).
        self._handed_back: deque[tuple[LlmJob, list[dict], float]] = deque()
        self._in_task = False
        # When the main thread last started or ended a task.
        self._state_since = time.monotonic()
        # Whether _watch_kept is due on the loop.
        self._watching = False
        # Whether the recorder thread has been asked to record; since when
        # it has been recording its current answer.
        self._recorder_due = False
        self._recording_since: float | None = None
        # Work of the recorder and the broker sends, for drain to wait on.
        self._side: set[Future] = set()
        self._closing = False
        self._hand_back_lock = threading.Lock()
        asyncio.run_coroutine_threadsafe(self._heartbeat(), self.loop)

    def start(self, coroutine) -> None:
        """Run ``coroutine`` on the loop and return at once; waits only while the loop is full."""
        self._room.acquire()
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future) -> None:
        with self._pending_lock:
            self._pending.discard(future)
        self._room.release()
        if not future.cancelled() and future.exception() is not None:
            log.error("LLM work failed on the loop", exc_info=future.exception())

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the work on the loop, then what it sent off it."""
        deadline = time.monotonic() + timeout
        with self._pending_lock:
            pending = set(self._pending)
        if pending:
            log.info("letting %d LLM jobs finish before the process exits", len(pending))
            wait_for_futures(pending, timeout=timeout)
        # The jobs' answers are sent (or one recorded) off the loop.
        with self._pending_lock:
            side = set(self._side)
        if side:
            wait_for_futures(side, timeout=max(0.0, deadline - time.monotonic()))

    async def on_db(self, fn, *args, **kwargs):
        return await self.loop.run_in_executor(
            self.db, partial(_dropping_broken_connection, fn, *args, **kwargs)
        )

    async def _heartbeat(self) -> None:
        every = max(1.0, settings.REVIEWAPP_STUCK_AFTER_SECONDS / 4)
        while True:
            await asyncio.sleep(every)
            ids = [pid for pid, n in self.in_flight.items() if n > 0]
            if ids:
                try:
                    await self.on_db(_touch, ids)
                except Exception:  # the heartbeat must outlive any one failure
                    log.exception("could not refresh proposals in flight")

    def session_for(self, base_url: str) -> aiohttp.ClientSession:
        """The endpoint's HTTP session: built once per process, on the loop, then reused."""
        session = self.sessions.get(base_url)
        if session is None:
            session = self.sessions[base_url] = aiohttp.ClientSession(
                # No pool cap of its own: the endpoint gate is the limit, and a
                # connector's default of 100 would silently be a second one.
                connector=aiohttp.TCPConnector(limit=0),
                # The calls are independent: a cookie one answer sets must not ride on the next.
                cookie_jar=aiohttp.DummyCookieJar(),
                # Not from the environment: with it aiohttp reads ~/.netrc and the
                # proxy variables on every request, in a thread each time (a
                # quarter of the loop's CPU), and would send a netrc password
                # to whatever host a lens names. The proxy is read once, below.
                trust_env=False,
            )
            self.proxies[base_url] = env_proxy(base_url)
        return session

    def gate_for(self, lens: Lens) -> EndpointGate:
        endpoint = endpoint_key(lens.base_url)
        lease = lens.timeout_seconds + LEASE_GRACE_SECONDS
        key = (endpoint, lens.max_concurrent_calls, lens.calls_per_minute, lease)
        gate = self.gates.get(key)
        if gate is None:
            options = {
                "max_concurrent": lens.max_concurrent_calls,
                "per_minute": lens.calls_per_minute,
                "lease_seconds": lease,
            }
            if isinstance(self.limits, RedisLimits):
                limits = self.limits

                async def try_acquire(count, release):
                    return await limits.try_acquire(
                        endpoint, count=count, release=release, **options
                    )

                release = partial(self.limits.release, endpoint)
            else:
                limits = self.limits

                async def try_acquire(count, release):
                    return await self.on_db(
                        limits.try_acquire, endpoint, count=count, release=release, **options
                    )

                async def release(tokens):
                    await self.on_db(limits.release, endpoint, tokens)

            gate = self.gates[key] = EndpointGate(try_acquire=try_acquire, release=release)
        return gate

    async def judge_job(self, job: LlmJob) -> None:
        """Judge the job's lenses at once, then hand their answers back (or send them on)."""
        self.in_flight[job.proposal_id] += 1
        try:
            answers = await asyncio.gather(*(self._answer(job, lens) for lens in job.lenses))
            if not self._hand_back(job, answers):
                self._side_work(self._io, _send, job, answers)
        finally:
            self.in_flight[job.proposal_id] -= 1
            if not self.in_flight[job.proposal_id]:
                del self.in_flight[job.proposal_id]

    def _hand_back(self, job: LlmJob, answers: list[dict]) -> bool:
        """Keep the answers for the main thread, unless enough already wait (or it is exiting)."""
        with self._hand_back_lock:
            if self._closing or len(self._handed_back) >= HAND_BACK_BACKLOG:
                return False
            self._handed_back.append((job, answers, time.monotonic()))
            start_watching = not self._watching
            self._watching = True
        if start_watching:
            self.loop.call_later(HAND_BACK_WAIT_SECONDS, self._watch_kept)
        return True

    def _watch_kept(self) -> None:
        """On the loop, every HAND_BACK_WAIT_SECONDS while answers are kept: see they are recorded.

        A main thread idle HAND_BACK_WAIT_SECONDS hands them to the recorder
        thread, which records them while it stays idle and no task waits in
        the queue to bring it back. If whoever is recording (the main thread
        in a task, or the recorder) has recorded nothing for
        HAND_BACK_STALL_SECONDS, it is in a long step (a slow checker's): the
        rest go onto the queue, for whichever pool slot is free.
        """
        with self._hand_back_lock:
            if not self._handed_back:  # all recorded (or sent on)
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
        self.loop.call_later(HAND_BACK_WAIT_SECONDS, self._watch_kept)

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
                with self._hand_back_lock:
                    oldest = self._handed_back[0][2] if self._handed_back else None
                if oldest is None or _gives_way(oldest):
                    return
                with self._hand_back_lock:
                    if self._in_task or not self._handed_back:
                        return
                    job, answers, _ = self._handed_back.popleft()
                    self._recording_since = time.monotonic()
                try:
                    _dropping_broken_connection(job.finish_here, answers)
                except Exception:
                    # As for a task that raised: the sweeper sends the proposal again.
                    log.exception("recording proposal %s's LLM answers failed", job.proposal_id)
                finally:
                    with self._hand_back_lock:
                        self._recording_since = None
        finally:
            with self._hand_back_lock:
                self._recorder_due = False

    def _send_kept(self) -> None:
        """Send every kept answer onto the queue (from the loop; the sends run off it)."""
        with self._hand_back_lock:
            left = list(self._handed_back)
            self._handed_back.clear()
        for job, answers, _ in left:
            self._side_work(self._io, _send, job, answers)

    def _side_work(self, executor: ThreadPoolExecutor, fn, *args) -> None:
        """Run ``fn`` on one of the loop's threads; a warm shutdown waits for it (``drain``)."""
        with self._pending_lock:  # counted before it can start, so drain never misses it
            future = executor.submit(fn, *args)
            self._side.add(future)
        future.add_done_callback(self._side_done)

    def _side_done(self, future: Future) -> None:
        with self._pending_lock:
            self._side.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("LLM answers' work failed off the loop", exc_info=future.exception())

    def main_thread_busy(self) -> None:
        """The main thread started a task: answers kept for it wait until it ends."""
        with self._hand_back_lock:
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
                with self._hand_back_lock:
                    if not self._handed_back:
                        break
                    oldest = self._handed_back[0][2]
                if _gives_way(oldest):
                    break
                with self._hand_back_lock:
                    if not self._handed_back:  # taken meanwhile (sent on, or by the recorder)
                        break
                    job, answers, _ = self._handed_back.popleft()
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
            with self._hand_back_lock:
                self._in_task = False
                self._state_since = time.monotonic()

    def send_handed_back(self) -> None:
        """Keep no more answers; send those kept onto the queue (the process is exiting).

        One the recorder has begun is finished there; ``drain`` waits for it
        and for these sends.
        """
        with self._hand_back_lock:
            self._closing = True
            left = list(self._handed_back)
            self._handed_back.clear()
        for job, answers, _ in left:
            _send(job, answers)

    async def _answer(self, job: LlmJob, lens: Lens) -> dict:
        try:
            outcome = await self.judge_lens(
                lens,
                content=job.content,
                thought_process=job.thought_process,
                policy=job.policy,
                target_id=str(job.proposal_id),
            )
        except LensFailed as exc:
            log.warning("lens %s failed on proposal %s: %s", lens.name, job.proposal_id, exc)
            return {"lens": lens.pk, "error": exc.reason, "attempts": exc.attempts}
        return answer_json(lens.pk, outcome)

    async def judge_lens(
        self,
        lens: Lens,
        *,
        content: str,
        thought_process: str,
        policy: GroundingPolicy,
        target_id: str,
    ) -> JudgeOutcome:
        """One LLM lens on one text, on this loop's clients and gates; raises LensFailed.

        Proposals and the admin's trials alike (``trial.llm_trial_run``).
        """
        try:
            api_key = llm_keys.read(lens.api_key_env)
        except PermissionError as refused:
            raise LensFailed(str(refused), 0, []) from refused
        session = self.session_for(lens.base_url)
        proxy, proxy_auth = self.proxies[lens.base_url]
        transport = AsyncChatTransport(
            session=session,
            proxy=proxy,
            proxy_auth=proxy_auth,
            base_url=lens.base_url,
            model=lens.model,
            api_key=api_key,
            temperature=lens.temperature,
            timeout=lens.timeout_seconds,
            response_format=lens.response_format,
            gate=self.gate_for(lens),
        )
        return await run_judge_async(
            transport=transport,
            time_limit=settings.REVIEWAPP_LLM_LENS_TIME_LIMIT,
            instructions=lens.instructions,
            lens_name=lens.name,
            content=content,
            thought_process=thought_process,
            policy=policy,
            target_id=target_id,
            transport_attempts=settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS,
        )


def env_proxy(base_url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy HTTPS_PROXY / HTTP_PROXY / NO_PROXY name for `base_url` (as for httpx)."""
    try:
        return get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return None, None


def answer_json(lens_id: int, outcome: JudgeOutcome) -> dict:
    """A judgement as the task that records it carries it."""
    return {
        "lens": lens_id,
        "verdict": outcome.verdict,
        "rationale": outcome.rationale,
        "claims": [claim.to_dict() for claim in outcome.claims],
        "unresolved": [
            {"cite": u.cite, "assessment": u.assessment, "note": u.note, "claim_id": u.claim_id}
            for u in outcome.unresolved
        ],
        "raw_response": outcome.raw_response,
        "attempts": outcome.transport_calls,
        "requote_rounds": outcome.requote_rounds,
    }


def _anchor(data: dict | None) -> AnswerBodyAnchor | ThoughtWindowAnchor | None:
    if data is None:
        return None
    if data["kind"] == ThoughtWindowAnchor.kind:
        return ThoughtWindowAnchor()
    return AnswerBodyAnchor(start_utf16=data["start_utf16"], end_utf16=data["end_utf16"])


def answer_outcome(answer: dict) -> JudgeOutcome | LensFailed:
    """An answer read back from its task: a judgement to record, or the lens's failure."""
    if "error" in answer:
        return LensFailed(answer["error"], answer["attempts"], [])
    return JudgeOutcome(
        verdict=answer["verdict"],
        rationale=answer["rationale"],
        claims=[
            GroundedClaim(
                cite=c["cite"],
                text=c["text"],
                claim_id=c["claim_id"],
                assessment=c["assessment"],
                note=c["note"],
                anchor=_anchor(c.get("anchor")),
            )
            for c in answer["claims"]
        ],
        unresolved_cites=[u["cite"] for u in answer["unresolved"]],
        raw_response=answer["raw_response"],
        transport_calls=answer["attempts"],
        repair_asks=0,
        requote_rounds=answer["requote_rounds"],
        transcript=[],
        unresolved=tuple(UnresolvedCite(target_id="", **u) for u in answer["unresolved"]),
    )


_runtime: _Runtime | None = None
_runtime_lock = threading.Lock()


def runtime() -> _Runtime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = _Runtime()
        return _runtime


def judge_in_background(job: LlmJob) -> None:
    """Hand a proposal's LLM lenses to this process's loop; returns without waiting on a model."""
    loop = runtime()
    # Called from a task: the first in this process started before its loop
    # did, so task_prerun could not say so.
    loop.main_thread_busy()
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
        _runtime.main_thread_busy()


@task_postrun.connect
def _main_thread_free(**kwargs) -> None:
    if _runtime is not None:
        _runtime.main_thread_free()


@worker_process_shutdown.connect  # a prefork child exiting
@worker_shutdown.connect  # a solo or threads worker exiting
def _finish_before_exit(**kwargs) -> None:
    if _runtime is not None:
        # No task will end here again: what the main thread kept, and what
        # answers from now on, goes onto the queue; drain waits for the
        # loop's jobs, the sends and the recorder's last answer.
        _runtime.send_handed_back()
        _runtime.drain(timeout=DRAIN_SECONDS)
