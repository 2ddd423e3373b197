"""Batched database reads for the MCP server's calls (reviewapp/mcp/db.py)."""

import asyncio

import pytest

from reviewapp.mcp.db import Coalesced, Lane


def run(coroutine):
    return asyncio.run(coroutine)


@pytest.fixture
def lane():
    return Lane("test-coalesced")


def test_calls_asking_at_once_share_a_few_batches(lane):
    batches = []

    def many(keys):
        batches.append(sorted(keys))
        return {key: key * 10 for key in keys}

    async def ask_all():
        coalesced = Coalesced(lane, many)
        return await asyncio.gather(*(coalesced.get(n % 50) for n in range(1000)))

    values = run(ask_all())

    assert values == [(n % 50) * 10 for n in range(1000)]
    assert len(batches) <= 2  # the first asker's batch, then every key asked meanwhile
    assert sorted({k for batch in batches for k in batch}) == list(range(50))


def test_each_call_gets_its_own_keys_error(lane):
    def many(keys):
        return {key: ValueError(f"no {key}") if key % 2 else key for key in keys}

    async def ask():
        coalesced = Coalesced(lane, many)
        return await asyncio.gather(*(coalesced.get(n) for n in range(4)), return_exceptions=True)

    values = run(ask())

    assert values[0] == 0 and values[2] == 2
    assert [str(v) for v in values[1::2]] == ["no 1", "no 3"]
    assert values[1] is not values[3]


def test_a_batch_that_fails_fails_each_of_its_calls_and_the_next_batch_runs(lane):
    failing = [True]

    def many(keys):
        if failing.pop():
            raise RuntimeError("the database went away")
        return {key: "ok" for key in keys}

    async def ask_twice():
        coalesced = Coalesced(lane, many)
        with pytest.raises(RuntimeError, match="went away"):
            await coalesced.get("a")
        failing.append(False)
        return await coalesced.get("a")

    assert run(ask_twice()) == "ok"


def test_a_cancelled_call_leaves_the_others_answered(lane):
    def many(keys):
        return {key: key for key in keys}

    async def ask():
        coalesced = Coalesced(lane, many)
        gone = asyncio.ensure_future(coalesced.get("gone"))
        kept = asyncio.ensure_future(coalesced.get("kept"))
        gone.cancel()
        return await kept

    assert run(ask()) == "kept"
