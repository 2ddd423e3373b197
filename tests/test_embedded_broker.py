"""The embedded broker stays whole with several producers and consumers at once."""

import multiprocessing
import queue

from kombu import Connection

from reviewapp.embedded_broker import Transport

PRODUCERS, CONSUMERS, PER_PRODUCER = 3, 3, 400


def _connection(folder):
    options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
        "processed_folder": str(folder / "processed"),
        "staging_folder": str(folder / "staging"),
        "polling_interval": 0.01,
    }
    for name in ("queue", "control", "processed", "staging"):
        (folder / name).mkdir(exist_ok=True)
    return Connection("filesystem://", transport=Transport, transport_options=options)


def _produce(folder, first):
    with _connection(folder) as conn, conn.SimpleQueue("drill") as q:
        for n in range(first, first + PER_PRODUCER):
            q.put({"n": n})


def _consume(folder, results, errors):
    try:
        with _connection(folder) as conn, conn.SimpleQueue("drill") as q:
            while True:
                try:
                    message = q.get(timeout=3)
                except queue.Empty:
                    return
                results.put(message.payload["n"])
                message.ack()
    except Exception as exc:  # reported to the test, which fails naming it
        errors.put(repr(exc))


def test_every_message_arrives_once_with_concurrent_producers_and_consumers(tmp_path):
    ctx = multiprocessing.get_context("fork")
    results, errors = ctx.Queue(), ctx.Queue()
    consumers = [ctx.Process(target=_consume, args=(tmp_path, results, errors))
                 for _ in range(CONSUMERS)]
    producers = [ctx.Process(target=_produce, args=(tmp_path, i * PER_PRODUCER))
                 for i in range(PRODUCERS)]
    for process in consumers + producers:
        process.start()
    for process in producers:
        process.join(120)
    received = []
    while any(p.is_alive() for p in consumers) or not results.empty():
        try:
            received.append(results.get(timeout=1))
        except queue.Empty:
            continue
    for process in consumers:
        process.join(10)

    assert [errors.get() for _ in range(errors.qsize())] == []
    assert sorted(received) == list(range(PRODUCERS * PER_PRODUCER))


def test_a_message_is_never_visible_in_the_queue_folder_before_it_is_whole(
    tmp_path, monkeypatch
):
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
