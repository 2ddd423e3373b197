"""A worker process's LLM loop: its thread, its HTTP sessions and endpoint gates, its jobs."""

import asyncio
import logging
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
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
from django.conf import settings
from django.utils import timezone
from yarl import URL

from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import FailureKind, JudgeOutcome, LensFailed
from reviewapp.core.judging.transport import error_text
from reviewapp.core.llm_calls import AsyncChatTransport, EndpointGate, run_judge_async
from reviewapp.core.llm_endpoints import PolicyResolver

from ...models import Lens, Proposal
from ..endpoint_limits import (
    LEASE_GRACE_SECONDS,
    DatabaseLimits,
    RedisLimits,
    endpoint_key,
    redis_url,
)
from ..endpoint_policy import endpoint_policy, refuse_endpoint
from ..evaluators import chat_options
from .answers import LlmJob, answer_json, failure_json
from .hand_back import HandBack, dropping_broken_connection

log = logging.getLogger(__name__)


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it exists (not on Windows): the same loop, for less CPU a call.

    Measured in llm_pipeline.py, six runs each: worker CPU per proposal over
    the recorded pipeline's 3.8 ms against 5.1 ms, ratio 0.76-0.97 (mean
    0.87) against 0.75-0.89 (mean 0.80).
    """
    if uvloop is None:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def allow_open_sockets() -> None:
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


def env_proxy(base_url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy HTTPS_PROXY / HTTP_PROXY / NO_PROXY name for `base_url` (as for httpx)."""
    try:
        return get_env_proxy_for_url(URL(base_url))
    except LookupError:
        return None, None


def _touch(proposal_ids: list[int]) -> None:
    Proposal.objects.filter(pk__in=proposal_ids).update(updated_at=timezone.now())


class Runtime:
    """This process's event loop, its database thread, its clients and gates, its kept answers."""

    def __init__(self) -> None:
        allow_open_sockets()
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="llm-loop", daemon=True)
        self._thread.start()
        # One thread, so one database connection for the whole loop.
        self.db = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-db")
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
        self.hand_back = HandBack(self.loop)
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
        self.hand_back.wait(deadline - time.monotonic())

    async def on_db(self, fn, *args, **kwargs):
        return await self.loop.run_in_executor(
            self.db, partial(dropping_broken_connection, fn, *args, **kwargs)
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
                connector=aiohttp.TCPConnector(limit=0, resolver=PolicyResolver(endpoint_policy())),
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
                "base_url": lens.base_url,
            }
            limits = self.limits
            # Redis limits are awaited on the loop itself; limits kept in the
            # database go through its thread.
            in_redis = isinstance(limits, RedisLimits)

            async def try_acquire(count, release, outcomes, waiting):
                ask = partial(
                    limits.try_acquire,
                    endpoint,
                    count=count,
                    release=release,
                    outcomes=outcomes,
                    waiting=waiting,
                    **options,
                )
                tokens, wait = await (ask() if in_redis else self.on_db(ask))
                # The calls in flight after the grant: each call's outcome says
                # at what count it was sent (core.endpoint_control's served_peak).
                return tokens, wait, limits.in_flight_seen(endpoint)

            async def release(tokens, outcomes):
                if outcomes:  # the provider's answers teach the endpoint's limit
                    await try_acquire(0, tokens, outcomes, 0)
                elif in_redis:
                    await limits.release(endpoint, tokens)
                else:
                    await self.on_db(limits.release, endpoint, tokens)

            gate = self.gates[key] = EndpointGate(try_acquire=try_acquire, release=release)
        return gate

    async def judge_job(self, job: LlmJob) -> None:
        """Judge the job's lenses at once, then hand their answers back (or send them on)."""
        self.in_flight[job.proposal_id] += 1
        try:
            answers = await asyncio.gather(*(self._answer(job, lens) for lens in job.lenses))
            self.hand_back.take(job, answers)
        finally:
            self.in_flight[job.proposal_id] -= 1
            if not self.in_flight[job.proposal_id]:
                del self.in_flight[job.proposal_id]

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
            return failure_json(lens.pk, exc)
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
        """One LLM lens on one text, on this loop's clients and gates; raises LensFailed,
        and only LensFailed: any other error of the call is one, of kind internal_error,
        so no lens is left without an answer or a failure.

        Proposals and the admin's trials alike (``audit.trials.llm_trial_run``), and replays.
        """
        try:
            refuse_endpoint(lens.base_url)  # a name's addresses: by the session's resolver
            options = chat_options(lens)
            session = self.session_for(lens.base_url)
            proxy, proxy_auth = self.proxies[lens.base_url]
            transport = AsyncChatTransport(
                **options,
                session=session,
                proxy=proxy,
                proxy_auth=proxy_auth,
                gate=self.gate_for(lens),
            )
            return await run_judge_async(
                transport=transport,
                time_limit=min(lens.deadline_seconds, settings.REVIEWAPP_LLM_LENS_TIME_LIMIT),
                instructions=lens.instructions,
                lens_name=lens.name,
                content=content,
                thought_process=thought_process,
                policy=policy,
                target_id=target_id,
                transport_attempts=settings.REVIEWAPP_LLM_TRANSPORT_ATTEMPTS,
            )
        except LensFailed:
            raise
        except Exception as exc:
            log.exception("lens %s: unexpected error in its call", lens.name)
            raise LensFailed(
                f"the call raised an unexpected {error_text(exc)}",
                0,
                [],
                kind=FailureKind.INTERNAL_ERROR,
            ) from exc
