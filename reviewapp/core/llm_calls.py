"""LLM calls that no worker waits on: the async transport, endpoint gates, the async loop.

Many proposals' calls are in flight at once on one event loop; a call holds
an endpoint slot only while its HTTP exchange runs. A transient error
(429 with Retry-After, 5xx, a timeout) gives the slot back and the retry is
deferred on the loop: nothing sleeps, and other calls take the slot
meanwhile. The budgets are ``judging.judge_steps``'s, unchanged; a 429 spends
none of them, and is reported with its slot so the endpoint's effective limit
follows the provider (``core.endpoint_control``).

Pure Python: aiohttp for the calls, and whatever shared store the caller
hands ``EndpointGate`` for the limits (Redis or the database, see
``reviewapp.review.evaluation.endpoint_limits``). aiohttp rather than httpx here: at
hundreds of calls in flight, httpx's async stack was a quarter of the
worker's CPU, about 3 ms a call, several times aiohttp's.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import aiohttp

from reviewapp.core.endpoint_control import Outcome, refusals_for
from reviewapp.core.judging import (
    Backoff,
    FailureKind,
    JudgeOutcome,
    LensFailed,
    PermanentTransportError,
    RateLimited,
    TransientTransportError,
    TransportError,
    judge_steps,
)
from reviewapp.core.judging.transport import (
    _answer_of,
    _parse_retry_after,
    _request_body,
    error_text,
    shown_url,
)

log = logging.getLogger(__name__)

# How soon to ask the shared store again after it failed to answer.
STORE_RETRY_SECONDS = 0.5
# How long slots given back wait for an ask of the store to carry them.
RELEASE_WAIT_SECONDS = 0.02
# The most of a provider's answer read, inflated: a chat completion is a few
# KiB, so anything near this is a broken or hostile provider, not a judgement.
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class EndpointGate:
    """Waits, in turn, for call slots at one endpoint; holds nothing while waiting.

    ``try_acquire(n, release, outcomes, waiting)`` gives the shared store back
    the slots in ``release`` with the ``outcomes`` of their calls that the
    endpoint's effective limit learns from (``Outcome``: served or refused),
    tells it how many calls wait here, then asks it for up to ``n``: the tokens
    it granted (as many as the limits allow now), when none how long to wait
    before asking again, and optionally how many calls were in flight at the
    endpoint after the grant (each call's outcome then says at what count it
    was sent). The wait is a Retry-After holding the endpoint, or a full
    endpoint (a release in this process wakes the waiters sooner; one
    elsewhere is seen at the next ask). This process's calls that wait for the endpoint
    queue in order, and one ask at a time serves them all, so a burst of
    calls costs one round trip to the store, not one each, and under a limit
    the calls are served in the order they asked.

    Slots given back ride on the next ask, or, if none comes within
    ``RELEASE_WAIT_SECONDS``, go together on their own (``release(tokens, outcomes)``):
    a round trip to the store cost about 0.5 ms of the loop's CPU, and a
    proposal's calls end at about the time new ones ask. A waiter for a full
    endpoint asks at once, carrying them, so a slot freed here is never held
    back from a call waiting here.
    """

    def __init__(
        self,
        *,
        try_acquire: Callable[
            [int, list[str], list[Outcome], int], Awaitable[tuple[list[str], float]]
        ],
        release: Callable[[list[str], list[Outcome]], Awaitable[None]],
    ) -> None:
        self._try_acquire = try_acquire
        self._release = release
        self._waiting: deque[asyncio.Future[str]] = deque()
        self._freed = asyncio.Event()
        self._asker: asyncio.Task | None = None
        # Slots given back and not yet sent, with their calls' outcomes:
        # resolved once the store has them.
        self._batch: tuple[asyncio.Future[None], list[str], list[Outcome]] | None = None
        # Each granted slot's count of calls in flight at the endpoint when
        # it was granted, itself included (the store says how many after a grant).
        self._positions: dict[str, int] = {}
        # Since when (monotonic) the provider has refused every call of ours
        # that this process heard back from (None: it served the last one).
        self.throttled_since: float | None = None
        # Running tasks must be referenced, or the loop may drop them.
        self._flushes: set[asyncio.Task] = set()

    async def acquire(self) -> str:
        slot: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.append(slot)
        if self._asker is None:
            self._asker = asyncio.ensure_future(self._ask())
        try:
            return await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():
                # Granted just as the call was given up on: straight back.
                self.give_back(slot.result())
            raise

    async def _ask(self) -> None:
        try:
            while self._live_waiters():
                self._freed.clear()
                batch, self._batch = self._batch, None
                released, outcomes = (batch[1], batch[2]) if batch else ([], [])
                try:
                    tokens, wait, *after = await self._try_acquire(
                        len(self._waiting), released, outcomes, len(self._waiting)
                    )
                    if after and after[0]:
                        first = after[0] - len(tokens)
                        self._positions.update((t, first + i + 1) for i, t in enumerate(tokens))
                except Exception:
                    # The shared store is briefly unreachable (Redis restarting,
                    # SQLite busy): ask again; the lens's time limit bounds it.
                    # Slots it did not take back expire with their leases.
                    log.warning("endpoint limits unavailable; asking again", exc_info=True)
                    tokens, wait = [], STORE_RETRY_SECONDS
                finally:
                    if batch:
                        batch[0].set_result(None)
                for token in tokens:
                    if self._live_waiters():
                        self._waiting.popleft().set_result(token)
                    else:  # every waiter gave up while the store answered
                        self.give_back(token)
                if not tokens:
                    try:
                        await asyncio.wait_for(self._freed.wait(), timeout=max(0.001, wait))
                    except TimeoutError:
                        pass
        finally:
            self._asker = None
            if self._batch is not None:
                # Given back during the last ask, and no ask follows to carry them.
                self._flush_later(self._batch, 0.0)

    def _live_waiters(self) -> bool:
        while self._waiting and self._waiting[0].done():  # given up (cancelled)
            self._waiting.popleft()
        return bool(self._waiting)

    def sent_in_flight(self, token: str) -> int:
        """Our calls in flight at the endpoint when `token` was granted (0: not known)."""
        return self._positions.get(token, 0)

    def give_back(self, token: str, outcome: Outcome | None = None) -> asyncio.Future[None]:
        """Give the slot back soon (see the class's docstring); resolved once the store has it.

        ``outcome``: what the call taught about the provider, if anything (a
        timeout or a 500 says nothing about its limits).
        """
        if outcome is not None:
            if not outcome.refused:
                self.throttled_since = None
            elif self.throttled_since is None:
                self.throttled_since = time.monotonic()
        self._positions.pop(token, None)
        if self._batch is None:
            self._batch = (asyncio.get_running_loop().create_future(), [], [])
            if self._asker is None:
                self._flush_later(self._batch, RELEASE_WAIT_SECONDS)
        done, tokens, outcomes = self._batch
        tokens.append(token)
        if outcome is not None:
            outcomes.append(outcome)
        if self._asker is not None:
            self._freed.set()  # a waiter for a full endpoint asks now, carrying it
        return done

    def _flush_later(self, batch: tuple, delay: float) -> None:
        flush = asyncio.ensure_future(self._flush(batch, delay))
        self._flushes.add(flush)
        flush.add_done_callback(self._flushes.discard)

    async def _flush(self, batch: tuple, delay: float) -> None:
        await asyncio.sleep(delay)  # slots given back meanwhile join the batch
        if self._batch is not batch:
            return  # an ask carried it
        self._batch = None
        done, tokens, outcomes = batch
        try:
            await self._release(tokens, outcomes)
        except Exception:
            # The slots' leases expire on their own; the calls' answers stand.
            log.warning("could not release endpoint slots", exc_info=True)
        finally:
            self._freed.set()
            done.set_result(None)


class AsyncChatTransport:
    """OpenAI-compatible ``/chat/completions`` on a shared ``aiohttp.ClientSession``."""

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession,
        base_url: str,
        model: str,
        api_key: str | None,
        temperature: float,
        timeout: float,
        response_format: str = "json_object",
        gate: EndpointGate | None = None,
        proxy: Any = None,
        proxy_auth: aiohttp.BasicAuth | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.session = session
        self.proxy, self.proxy_auth = proxy, proxy_auth
        self.model = model
        # Answers asked for uncompressed: a few compressed bytes can inflate to gigabytes.
        self.headers = {"Accept-Encoding": "identity"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.temperature = temperature
        self.timeout = timeout
        self.response_format = response_format
        self.gate = gate

    async def complete(self, messages: list[dict]) -> str:
        body = _request_body(
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            response_format=self.response_format,
        )
        token = await self.gate.acquire() if self.gate is not None else None
        sent_at = time.time()
        outcome: Outcome | None = None
        try:
            # One deadline for the whole exchange, body included, so a server
            # trickling bytes cannot hold the call past it.
            async with asyncio.timeout(self.timeout):
                async with self.session.post(
                    self.url,
                    json=body,
                    headers=self.headers,
                    proxy=self.proxy,
                    proxy_auth=self.proxy_auth,
                    auto_decompress=False,  # inflated by _read_capped, under its cap
                ) as response:
                    status = response.status
                    retry_after = response.headers.get("Retry-After")
                    content = await _read_capped(response)
            outcome = _outcome(status, retry_after, sent_at)
            if outcome is not None and token is not None:
                outcome = replace(outcome, sent_in_flight=self.gate.sent_in_flight(token))
        except TimeoutError as exc:
            raise TransientTransportError(f"response not complete within {self.timeout}s") from exc
        except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
            raise PermanentTransportError(f"request failed: {error_text(exc)}") from exc
        except aiohttp.ClientError as exc:
            raise TransientTransportError(f"transport error: {error_text(exc)}") from exc
        finally:
            if token is not None:
                # Given back before any retry is even considered (a retry's
                # ask carries it); not awaited, so the answer does not wait
                # for the store.
                self.gate.give_back(token, outcome)
        return _answer_of(status, retry_after, content)


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    """The answer's body, inflated if the provider compressed it anyway, never past
    ``MAX_ANSWER_BYTES``: a bigger one ends the call (``PermanentTransportError``)."""
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", "x-gzip", "deflate"):
        raise PermanentTransportError(
            f"the provider's answer is {encoding}-encoded, though asked for an uncompressed one"
        )
    # A gzip or a zlib header, told apart by the stream: servers label one as the other.
    inflate = zlib.decompressobj(wbits=32 + zlib.MAX_WBITS) if encoding != "identity" else None
    body = bytearray()
    async for chunk in response.content.iter_any():
        if inflate is not None:
            try:
                # One byte past the cap at most, however much the chunk would inflate to.
                chunk = inflate.decompress(chunk, MAX_ANSWER_BYTES + 1 - len(body))
            except zlib.error as exc:
                raise PermanentTransportError(
                    f"the provider's {encoding} answer does not inflate: {exc}"
                ) from exc
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise PermanentTransportError(
                f"the provider's answer exceeded {MAX_ANSWER_BYTES:,} bytes"
                + (" inflated" if inflate is not None else "")
            )
    return bytes(body)


def _outcome(status: int, retry_after: str | None, sent_at: float) -> Outcome | None:
    """What an answer says about the provider's limits: served, refused, or nothing."""
    if status == 429 or (status == 503 and retry_after):
        return Outcome(refused=True, sent_at=sent_at, retry_after=_parse_retry_after(retry_after))
    if status < 400:
        return Outcome(refused=False, sent_at=sent_at)
    return None


async def run_judge_async(
    *,
    transport: AsyncChatTransport,
    time_limit: float,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    **loop: Any,
) -> JudgeOutcome:
    """``judging.run_judge`` on an async transport, within ``time_limit`` seconds in all.

    A ``Backoff`` is awaited, not slept: the retry is deferred on the loop and
    the slot it would hold is free meanwhile. Reaching the time limit — in a
    call or between calls — is a lens failure at once, never a task left
    running or a proposal left to the sweeper. When the provider was refusing
    calls (429) as it was reached, the failure says so and for how long.
    """
    steps = judge_steps(**loop)
    calls = 0
    transcript: list[dict] = []
    started = time.monotonic()
    # Since when this lens's own calls have been answered 429 (None: they were not).
    refused_since: float | None = None
    reply: str | None = None
    error: TransportError | None = None
    try:
        async with asyncio.timeout(time_limit):
            while True:
                try:
                    step = steps.throw(error) if error is not None else steps.send(reply)
                except StopIteration as done:
                    return done.value
                reply = error = None
                if isinstance(step, Backoff):
                    await sleep(step.seconds)
                    continue
                calls += 1
                transcript = step
                try:
                    reply = await transport.complete(step)
                    refused_since = None
                except RateLimited as exc:
                    error = exc
                    refused_since = refused_since or time.monotonic()
                except TransportError as exc:
                    error = exc
                    refused_since = None
    except TimeoutError as exc:
        throttled = [t for t in (refused_since, _throttled_since(transport)) if t is not None]
        raise _out_of_time(transport, time_limit, started, throttled, calls, transcript) from exc


def _out_of_time(
    transport: AsyncChatTransport,
    time_limit: float,
    started: float,
    throttled: list[float],
    calls: int,
    transcript: list[dict],
) -> LensFailed:
    """The lens's failure at its time limit: the provider's 429s since the first of
    `throttled`, if it was refusing calls then; else the time limit itself."""
    now = time.monotonic()
    if throttled:
        return LensFailed(
            f"the provider at {shown_url(transport.base_url)} answered 429 for "
            f"{refusals_for(now - min(throttled))}",
            calls,
            transcript,
            kind=FailureKind.RATE_LIMITED,
        )
    return LensFailed(
        f"time limit of {time_limit:g}s reached after {now - started:.1f}s",
        calls,
        transcript,
        kind=FailureKind.TIMEOUT,
    )


def _throttled_since(transport: AsyncChatTransport) -> float | None:
    """Since when the lens's endpoint has refused calls, for a lens still waiting its turn."""
    return transport.gate.throttled_since if transport.gate is not None else None
