"""The embedded broker stays whole with several producers and consumers at once."""

import multiprocessing
import queue
import time
from collections import Counter

from tests.support.embedded_broker import embedded_connection

PRODUCERS, CONSUMERS, PER_PRODUCER = 3, 3, 400
PRODUCE_SECONDS, DRAIN_SECONDS = 120, 60  # generous: the machine may be loaded


def _connection(folder):
    return embedded_connection(folder, polling_interval=0.01)


def _produce(folder, first, errors):
    try:
        with _connection(folder) as conn, conn.SimpleQueue("drill") as q:
            for n in range(first, first + PER_PRODUCER):
                q.put({"n": n})
    except Exception as exc:  # reported to the test, which fails naming it
        errors.put(repr(exc))
        raise


def _consume(folder, results, errors, produced):
    """Take messages until every producer is done and the queue is found empty.

    `produced` is read before each poll: a poll that finds nothing after it was
    set has seen every message there will ever be. A consumer that stopped
    after a few idle seconds instead could leave before slow producers start.
    """
    try:
        with _connection(folder) as conn, conn.SimpleQueue("drill") as q:
            while True:
                finished = produced.is_set()
                try:
                    message = q.get(timeout=0.5)
                except queue.Empty:
                    if finished:
                        return
                    continue
                results.put(message.payload["n"])
                message.ack()
    except Exception as exc:
        errors.put(repr(exc))
        raise


def test_every_message_arrives_once_with_concurrent_producers_and_consumers(tmp_path):
    # spawn, not fork: pytest's process may have threads (a live server's), and a
    # child forked from it can hang on a lock one of them held (CI saw the producers
    # never finish, with Python's "multi-threaded, use of fork()" warning).
    ctx = multiprocessing.get_context("spawn")
    results, errors, produced = ctx.Queue(), ctx.Queue(), ctx.Event()
    consumers = [
        ctx.Process(target=_consume, args=(tmp_path, results, errors, produced))
        for _ in range(CONSUMERS)
    ]
    producers = [
        ctx.Process(target=_produce, args=(tmp_path, i * PER_PRODUCER, errors))
        for i in range(PRODUCERS)
    ]
    received = []
    try:
        for process in consumers + producers:
            process.start()
        deadline = time.monotonic() + PRODUCE_SECONDS
        for process in producers:
            process.join(max(0.0, deadline - time.monotonic()))
        assert [p.exitcode for p in producers] == [0] * PRODUCERS, "a producer failed or hung"
        produced.set()
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline and (
            any(p.is_alive() for p in consumers) or not results.empty()
        ):
            try:
                received.append(results.get(timeout=0.5))
            except queue.Empty:
                continue
        assert [p.exitcode for p in consumers] == [0] * CONSUMERS, "a consumer failed or hung"
    finally:
        for process in consumers + producers:
            if process.is_alive():
                process.kill()
                process.join(5)

    assert [errors.get() for _ in range(errors.qsize())] == []
    counts = Counter(received)
    assert {n: c for n, c in counts.items() if c > 1} == {}, "delivered more than once"
    assert sorted(set(range(PRODUCERS * PER_PRODUCER)) - counts.keys()) == [], "never delivered"
    assert len(received) == PRODUCERS * PER_PRODUCER
    assert list((tmp_path / "queue").iterdir()) == []  # nothing stranded
    assert list((tmp_path / "staging").iterdir()) == []  # nothing half-written left behind


def test_a_message_is_never_visible_in_the_queue_folder_before_it_is_whole(tmp_path, monkeypatch):
    real_open = open
    queue_while_writing = []

    def watching_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        if "w" in mode:
            queue_while_writing.append(sorted(p.name for p in (tmp_path / "queue").iterdir()))
        return handle

    with _connection(tmp_path) as conn:
        channel = conn.default_channel
        monkeypatch.setattr("builtins.open", watching_open)
        channel._put("drill", {"body": "x" * 10_000})
        monkeypatch.undo()

        assert queue_while_writing == [[]]
        assert len(list((tmp_path / "queue").iterdir())) == 1
        assert channel._get("drill") == {"body": "x" * 10_000}


def test_a_channel_makes_the_folders_it_needs(tmp_path):
    folder = tmp_path / "broker"  # nothing made: the settings do not make it
    with embedded_connection(folder) as conn:
        with conn.SimpleQueue("made") as q:
            q.put({"n": 1})
            message = q.get(timeout=5)
            message.ack()
    assert message.payload == {"n": 1}
    assert {p.name for p in folder.iterdir()} == {"queue", "control", "processed", "staging"}
