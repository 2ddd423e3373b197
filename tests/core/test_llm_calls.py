"""The async transport and loop against the real loopback server: deferral, slots, time limit."""

import asyncio
import gzip
import json
import time
import tracemalloc
import zlib

import aiohttp
import pytest

from reviewapp.core.cite import GroundingPolicy
from reviewapp.core.judging import FailureKind, LensFailed
from reviewapp.core.llm_calls import (
    MAX_ANSWER_BYTES,
    RELEASE_WAIT_SECONDS,
    AsyncChatTransport,
    EndpointGate,
    run_judge_async,
)
from tests.core.openai_stub import (
    Answer,
    HttpError,
    RateLimited,
    RawBody,
    Slow,
    completion,
)

CONTENT = "Paris is the capital of France."
PASS = '{"verdict": "pass", "rationale": "ok", "claims": [{"cite": "Paris is the capital"}]}'


class CountingStore:
    """A shared store with `size` slots that records how many were ever held at once."""

    def __init__(self, size):
        self.size, self.held, self.most, self.log, self.asks = size, set(), 0, [], []
        self.outcomes = []

    async def try_acquire(self, count, release, outcomes=(), waiting=0):
        self.outcomes += outcomes
        self.asks.append(count)
        await self.release(release)
        granted = []
        while len(self.held) < self.size and len(granted) < count:
            token = str(sum(1 for kind, _ in self.log if kind == "take"))
            self.held.add(token)
            self.log.append(("take", token))
            granted.append(token)
        self.most = max(self.most, len(self.held))
        return granted, 0.0 if granted else 0.01

    async def release(self, tokens, outcomes=()):
        self.outcomes += outcomes
        for token in tokens:
            self.held.discard(token)
            self.log.append(("give", token))


def _judge(server_url, gate=None, *, sleep=asyncio.sleep, time_limit=30.0, timeout=10.0):
    async def run():
        async with aiohttp.ClientSession() as session:
            transport = AsyncChatTransport(
                session=session,
                base_url=server_url,
                model="m",
                api_key=None,
                temperature=0.0,
                timeout=timeout,
                gate=gate,
            )
            try:
                return await run_judge_async(
                    transport=transport,
                    time_limit=time_limit,
                    sleep=sleep,
                    instructions="Judge.",
                    lens_name="lens",
                    content=CONTENT,
                    thought_process="",
                    policy=GroundingPolicy.REPAIR,
                    target_id="1",
                    transport_attempts=3,
                    rng=lambda: 0.0,
                )
            finally:
                if gate is not None:
                    # The last slot goes back within the release wait: on a loop
                    # that runs on, as the LLM loop does, not one about to close.
                    await asyncio.sleep(2 * RELEASE_WAIT_SECONDS)

    return asyncio.run(run())


def test_a_429_gives_the_slot_back_while_its_retry_is_deferred(openai_server):
    openai_server.script([RateLimited("2"), Answer(PASS)])
    store = CountingStore(1)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)
    held_while_waiting = []

    async def deferred(seconds):
        await asyncio.sleep(2 * RELEASE_WAIT_SECONDS)  # the deferral, shortened
        held_while_waiting.append((seconds, len(store.held)))

    outcome = _judge(openai_server.base_url, gate, sleep=deferred)
    assert outcome.verdict == "pass" and outcome.transport_calls == 2
    assert held_while_waiting == [(2.0, 0)]  # Retry-After honoured, with no slot held
    assert store.log == [("take", "0"), ("give", "0"), ("take", "1"), ("give", "1")]


def test_a_server_error_is_retried_on_the_loop_and_then_succeeds(openai_server):
    openai_server.script([HttpError(500), Answer(PASS)])
    outcome = _judge(openai_server.base_url)
    assert outcome.verdict == "pass" and outcome.transport_calls == 2


def test_an_endpoint_that_keeps_failing_spends_the_whole_transport_budget(openai_server):
    openai_server.script([HttpError(503)] * 3)
    with pytest.raises(LensFailed, match="transport budget exhausted") as failed:
        _judge(openai_server.base_url)
    assert failed.value.attempts == 3 and len(openai_server.requests) == 3


def test_the_time_limit_ends_a_call_in_flight_as_a_lens_failure(openai_server):
    openai_server.script([Slow(10, PASS)])
    with pytest.raises(LensFailed, match="time limit of 0.5s reached") as failed:
        _judge(openai_server.base_url, time_limit=0.5)
    assert failed.value.attempts == 1
    assert failed.value.kind == FailureKind.TIMEOUT


def test_waiters_for_a_full_endpoint_are_served_in_turn_never_beyond_its_size():
    store = CountingStore(2)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)
    order = []

    async def call(n):
        token = await gate.acquire()
        order.append(n)
        await asyncio.sleep(0.02)
        await gate.give_back(token)

    async def run():
        for n in range(6):
            asyncio.get_running_loop().create_task(call(n))
            await asyncio.sleep(0)  # each asks in this order
        while len(order) < 6:
            await asyncio.sleep(0.01)

    asyncio.run(run())
    assert order == list(range(6))
    assert store.most == 2


def test_a_shared_store_that_fails_to_answer_is_asked_again_not_fatal(monkeypatch):
    monkeypatch.setattr("reviewapp.core.llm_calls.STORE_RETRY_SECONDS", 0.01)
    answers = iter([ConnectionError("redis restarting"), (["slot"], 0.0)])

    async def try_acquire(count, release, outcomes=(), waiting=0):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def release(tokens, outcomes=()):
        raise ConnectionError("still restarting")

    async def run():
        gate = EndpointGate(try_acquire=try_acquire, release=release)
        token = await gate.acquire()
        await gate.give_back(token)  # a failed release is logged, never raised
        return token

    assert asyncio.run(run()) == "slot"


def test_a_burst_of_calls_waiting_for_an_endpoint_costs_one_ask_of_the_store():
    store = CountingStore(100)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)

    async def run():
        tokens = await asyncio.gather(*(gate.acquire() for _ in range(50)))
        await asyncio.gather(*(gate.give_back(token) for token in tokens))
        return tokens

    tokens = asyncio.run(run())
    assert len(set(tokens)) == 50
    assert store.asks == [50]
    assert not store.held  # all given back, in one batch
    assert len([kind for kind, _ in store.log if kind == "give"]) == 50


def test_a_slot_granted_to_a_call_that_gave_up_goes_back_to_the_store():
    store = CountingStore(1)
    granted = None

    async def try_acquire(count, release, outcomes=(), waiting=0):
        tokens, wait = await store.try_acquire(count, release, outcomes)
        if tokens:
            granted.set()  # wakes the test before the waiting call resumes
        return tokens, wait

    async def run():
        nonlocal granted
        granted = asyncio.Event()
        gate = EndpointGate(try_acquire=try_acquire, release=store.release)
        waiter = asyncio.ensure_future(gate.acquire())
        await granted.wait()
        waiter.cancel()  # its lens ran out of time as the slot came
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.sleep(2 * RELEASE_WAIT_SECONDS)
        return set(store.held)

    assert asyncio.run(run()) == set()  # not leaked until its lease ends


def test_slots_given_back_ride_on_the_next_ask_of_the_store():
    store = CountingStore(10)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)
    releases = []
    store_release = store.release

    async def counted_release(tokens, outcomes=()):
        releases.append(list(tokens))
        await store_release(tokens, outcomes)

    store.release = counted_release

    async def run():
        first = await gate.acquire()
        gate.give_back(first)  # no ask is running: it waits for one
        await gate.acquire()  # this ask carries it
        await asyncio.sleep(0.05)  # past the release wait: nothing left to send on its own

    asyncio.run(run())
    assert store.asks == [1, 1]
    assert releases == [[], ["0"]]  # inside the second ask, never a round trip of its own
    assert store.held == {"1"}


def test_slots_given_back_with_no_ask_to_carry_them_go_together_on_their_own():
    store = CountingStore(10)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)

    async def run():
        tokens = await asyncio.gather(*(gate.acquire() for _ in range(3)))
        await asyncio.gather(*(gate.give_back(token) for token in tokens))

    asyncio.run(run())
    assert store.asks == [3]
    assert not store.held


def test_a_slot_given_back_goes_at_once_to_a_call_waiting_for_the_full_endpoint():
    store = CountingStore(1)
    store_try_acquire = store.try_acquire

    async def slow_to_ask_again(count, release, outcomes=(), waiting=0):
        tokens, _ = await store_try_acquire(count, release, outcomes)
        return tokens, 5.0  # when full: "ask again in 5 s"

    gate = EndpointGate(try_acquire=slow_to_ask_again, release=store.release)

    async def run():
        first = await gate.acquire()
        waiter = asyncio.ensure_future(gate.acquire())
        await asyncio.sleep(0.01)  # it asked, and was told to wait 5 s
        gate.give_back(first)
        return await asyncio.wait_for(waiter, timeout=1)

    assert asyncio.run(run()) == "1"
    assert store.log == [("take", "0"), ("give", "0"), ("take", "1")]  # in one ask
    assert store.asks == [1, 1, 1]


async def _no_wait(seconds):
    return None


def test_429s_spend_no_transport_attempt(openai_server):
    # Three attempts, five 429s first: a busy provider, not a broken one.
    openai_server.script([RateLimited("1")] * 5 + [Answer(PASS)])
    outcome = _judge(openai_server.base_url, sleep=_no_wait)
    assert outcome.verdict == "pass" and outcome.transport_calls == 6


def test_429s_and_server_errors_keep_separate_accounts(openai_server):
    openai_server.script([RateLimited("1"), HttpError(500), RateLimited("1"), HttpError(500)])
    openai_server.script([HttpError(500)])
    with pytest.raises(LensFailed, match="transport budget exhausted") as failed:
        _judge(openai_server.base_url, sleep=_no_wait)
    assert failed.value.attempts == 5  # three 500s spent the three attempts


def test_a_provider_answering_only_429_fails_the_lens_at_its_deadline_naming_the_429s(
    openai_server,
):
    openai_server.respond = lambda request: RateLimited("0")
    with pytest.raises(LensFailed) as failed:
        _judge(openai_server.base_url, time_limit=1.2, sleep=lambda s: asyncio.sleep(0.05))
    assert failed.value.reason == (
        f"the provider at {openai_server.base_url} answered 429 for 1 second"
    )
    assert failed.value.attempts > 3
    assert failed.value.kind == FailureKind.RATE_LIMITED


def test_a_lens_waiting_behind_a_throttled_endpoint_fails_naming_the_429s(openai_server):
    held = EndpointGate(try_acquire=CountingStore(0).try_acquire, release=CountingStore(0).release)
    held.throttled_since = time.monotonic() - 90  # refused by the provider 90 s ago, and since
    with pytest.raises(LensFailed) as failed:
        _judge(openai_server.base_url, held, time_limit=0.3)
    assert failed.value.reason.endswith("answered 429 for 2 minutes")
    assert not openai_server.requests


def test_a_slow_provider_that_never_refused_fails_on_the_time_limit_as_before(openai_server):
    openai_server.script([Slow(10, PASS)])
    with pytest.raises(LensFailed, match="time limit of 0.5s reached"):
        _judge(openai_server.base_url, time_limit=0.5)


def test_the_gate_is_told_which_calls_the_provider_refused_and_which_it_served(openai_server):
    openai_server.script([RateLimited("2"), HttpError(500), Answer(PASS)])
    store = CountingStore(5)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)
    _judge(openai_server.base_url, gate, sleep=_no_wait)
    assert [(o.refused, o.retry_after) for o in store.outcomes] == [(True, 2.0), (False, None)]
    assert gate.throttled_since is None  # served since


def test_a_503_with_retry_after_is_a_refusal_that_spends_an_attempt(openai_server):
    openai_server.script([HttpError(503, headers={"Retry-After": "1"})] * 3)
    store = CountingStore(5)
    gate = EndpointGate(try_acquire=store.try_acquire, release=store.release)
    with pytest.raises(LensFailed, match="transport budget exhausted"):
        _judge(openai_server.base_url, gate, sleep=_no_wait)
    assert [o.refused for o in store.outcomes] == [True] * 3


def test_each_outcome_says_how_many_calls_were_in_flight_when_it_was_sent(openai_server):
    openai_server.script([Answer(PASS)])
    store = CountingStore(5)

    async def try_acquire(count, release, outcomes=(), waiting=0):
        tokens, wait = await store.try_acquire(count, release, outcomes)
        return tokens, wait, len(store.held) + 2  # two more held by another process

    gate = EndpointGate(try_acquire=try_acquire, release=store.release)
    _judge(openai_server.base_url, gate)
    assert [o.sent_in_flight for o in store.outcomes] == [3]


def test_answers_are_asked_for_uncompressed(openai_server):
    openai_server.script([Answer(PASS)])
    _judge(openai_server.base_url)
    assert openai_server.requests[0].accept_encoding == "identity"


def test_an_answer_over_the_byte_cap_fails_the_lens_at_once_saying_so(openai_server):
    openai_server.script([RawBody(b" " * (MAX_ANSWER_BYTES + 1))])
    with pytest.raises(LensFailed, match=f"answer exceeded {MAX_ANSWER_BYTES:,} bytes") as failed:
        _judge(openai_server.base_url)
    assert failed.value.kind == FailureKind.HTTP_ERROR
    assert failed.value.attempts == 1  # a bigger answer is not asked for again


def _gzip_bomb(inflated_mib: int) -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join(deflate.compress(block) for _ in range(inflated_mib)) + deflate.flush()


def test_a_compressed_bomb_is_refused_without_being_inflated_past_the_cap(openai_server):
    bomb = _gzip_bomb(256)  # 256 MiB of zeros in about 250 KiB
    openai_server.script([RawBody(bomb, "gzip")])
    tracemalloc.start()
    try:
        with pytest.raises(LensFailed, match=f"exceeded {MAX_ANSWER_BYTES:,} bytes inflated"):
            _judge(openai_server.base_url)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_ANSWER_BYTES


@pytest.mark.parametrize(
    "encoding, compress", [("gzip", gzip.compress), ("deflate", zlib.compress)]
)
def test_an_answer_compressed_though_asked_for_uncompressed_is_still_read(
    openai_server, encoding, compress
):
    openai_server.script([RawBody(compress(json.dumps(completion(PASS)).encode()), encoding)])
    outcome = _judge(openai_server.base_url)
    assert outcome.verdict == "pass" and outcome.transport_calls == 1


def test_an_answer_in_an_encoding_not_inflated_here_fails_the_lens_naming_it(openai_server):
    openai_server.script([RawBody(b"\x28\xb5\x2f\xfd-not-really-zstd", "zstd")])
    with pytest.raises(LensFailed, match="answer is zstd-encoded") as failed:
        _judge(openai_server.base_url)
    assert failed.value.kind == FailureKind.HTTP_ERROR


def test_an_answer_labelled_gzip_that_does_not_inflate_fails_the_lens_saying_so(openai_server):
    openai_server.script([RawBody(b"plainly not gzip", "gzip")])
    with pytest.raises(LensFailed, match="gzip answer does not inflate") as failed:
        _judge(openai_server.base_url)
    assert failed.value.kind == FailureKind.HTTP_ERROR
