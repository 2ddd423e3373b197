"""`manage.py run_witness`: its key, its state kept atomically, and HTTP details."""

import base64
import io
import json
import socket
import stat
import threading
import time

import httpx
import pytest
from django.core.management import CommandError, call_command

from reviewapp.core.signing import Signer
from reviewapp.core.witness_protocol import logs_by_origin, parse_log
from reviewapp.ledger import witness_server
from reviewapp.ledger.witness_server import StateError, Witness, WitnessState, serve
from tests.support import c2sp_cosignature as spec
from tests.support.memory_log import MemoryLog

ORIGIN = "example.org/log"


@pytest.fixture
def log():
    return MemoryLog(ORIGIN, 16)


@pytest.fixture
def witness(tmp_path, log):
    return Witness(
        name="w.example/w",
        signer=Signer.generate(),
        logs=logs_by_origin([parse_log(log.vkey)]),
        state=WitnessState(tmp_path / "state.json"),
    )


def test_init_key_prints_the_vkey_and_writes_a_private_key_file(tmp_path):
    out = io.StringIO()
    path = tmp_path / "w.key"
    call_command("run_witness", "--name", "w.example/w", "--init-key", str(path), stdout=out)
    vkey = out.getvalue().strip()
    public = Signer.from_file(path).public_key
    assert vkey == spec.vkey("w.example/w", public)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert base64.b64encode(public).decode() not in path.read_text()  # the seed, not the key


def test_init_key_never_replaces_a_key(tmp_path):
    path = tmp_path / "w.key"
    call_command("run_witness", "--name", "w", "--init-key", str(path), stdout=io.StringIO())
    before = path.read_bytes()
    with pytest.raises(CommandError, match="exists; a key is never replaced"):
        call_command("run_witness", "--name", "w", "--init-key", str(path), stdout=io.StringIO())
    assert path.read_bytes() == before


def test_a_witness_name_with_a_space_is_refused(tmp_path):
    with pytest.raises(CommandError, match="without spaces"):
        call_command("run_witness", "--name", "a b", "--init-key", str(tmp_path / "k"))
    assert not (tmp_path / "k").exists()


def test_a_corrupt_state_file_stops_the_start(tmp_path, log):
    (tmp_path / "state.json").write_text("{not json")
    key = tmp_path / "w.key"
    call_command("run_witness", "--name", "w", "--init-key", str(key), stdout=io.StringIO())
    with pytest.raises(CommandError, match="is not valid"):
        call_command("run_witness", "--name", "w", "--key-file", str(key), "--log", log.vkey,
                     "--state", str(tmp_path / "state.json"))  # fmt: skip


def test_a_malformed_log_vkey_stops_the_start(tmp_path):
    key = tmp_path / "w.key"
    call_command("run_witness", "--name", "w", "--init-key", str(key), stdout=io.StringIO())
    with pytest.raises(CommandError, match="signature type 0x01"):
        call_command("run_witness", "--name", "w", "--key-file", str(key), "--log",
                     "example.org/log+00000000+AAAA", "--state", str(tmp_path / "s"))  # fmt: skip


def test_the_state_is_written_before_the_cosignature_is_returned(witness, log):
    status, _, body = witness.add_checkpoint(log.body(0, 5))
    assert status == 200
    assert WitnessState(witness.state.path).read()[ORIGIN].size == 5
    saved = json.loads(witness.state.path.read_text())
    assert saved["logs"][ORIGIN]["size"] == 5
    assert not list(witness.state.path.parent.glob(".state.json.*"))  # no temporary left
    assert body.decode().startswith("\u2014 w.example/w ")


def test_a_restarted_witness_remembers_what_it_cosigned(witness, log, tmp_path):
    witness.add_checkpoint(log.body(0, 8))
    again = Witness(
        name=witness.name,
        signer=witness.signer,
        logs=witness.logs,
        state=WitnessState(witness.state.path),
    )
    status, content_type, body = again.add_checkpoint(log.body(0, 4))
    assert (status, content_type, body) == (409, "text/x.tlog.size", b"8\n")


def test_concurrent_requests_never_roll_the_state_back(witness, log):
    """The specification's race: size N and N+K checked at once; one must get 409."""
    witness.add_checkpoint(log.body(0, 4))
    barrier = threading.Barrier(2)
    answers = {}

    def send(size):
        barrier.wait()
        answers[size] = witness.add_checkpoint(log.body(4, size))[0]

    threads = [threading.Thread(target=send, args=(size,)) for size in (8, 12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers.values()) == [200, 409]
    winner = next(size for size, status in answers.items() if status == 200)
    assert WitnessState(witness.state.path).read()[ORIGIN].size == winner


def test_the_http_server_answers_only_post_add_checkpoint(witness, log):
    server = serve(witness, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with httpx.Client() as client:  # one kept-alive connection for every request
            assert client.post(f"{base}/add-checkpoint", content=log.body(0, 3)).status_code == 200
            assert client.post(f"{base}/elsewhere", content=b"x").status_code == 404
            assert client.get(f"{base}/add-checkpoint").status_code == 405
            assert client.post(f"{base}/add-checkpoint", content=b"old 0\n").status_code == 400
            big = b"x" * (64 * 1024 + 1)
            assert client.post(f"{base}/add-checkpoint", content=big).status_code == 413
    finally:
        server.shutdown()
        server.server_close()


HUGE = "9" * 5000  # more digits than Python's int() takes from a string


@pytest.mark.parametrize(
    "line",
    [b"old 0\n", b"\n3\n"],  # the old size; the checkpoint's tree size
)
def test_a_size_with_more_digits_than_any_tree_is_a_400(witness, log, line):
    body = log.body(0, 3).replace(line, line.replace(b"0" if b"old" in line else b"3",
                                                     HUGE.encode()), 1)  # fmt: skip

    status, _, answer = witness.add_checkpoint(body)

    assert status == 400
    assert b"malformed request" in answer


def test_a_content_length_with_more_digits_than_any_body_is_a_413(witness):
    server = serve(witness, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with socket.create_connection(server.server_address[:2], timeout=10) as connection:
            connection.sendall(
                b"POST /add-checkpoint HTTP/1.1\r\nHost: w\r\n"
                b"Content-Length: " + HUGE.encode() + b"\r\n\r\n"
            )
            reply = connection.recv(4096)
    finally:
        server.shutdown()
        server.server_close()
    assert reply.startswith(b"HTTP/1.1 413 ")


def test_a_client_trickling_its_request_is_cut_off_at_the_deadline(witness, monkeypatch):
    monkeypatch.setattr(witness_server, "REQUEST_DEADLINE_SECONDS", 1.0)
    server = serve(witness, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    connection = socket.create_connection(server.server_address[:2], timeout=5)

    def trickle():  # a byte every 0.2 s, well within the read timeout, for 10 s
        try:
            connection.sendall(b"POST /add-checkpoint HTTP/1.1\r\nContent-Length: 1000\r\n\r\n")
            for _ in range(50):
                time.sleep(0.2)
                connection.sendall(b"o")
        except OSError:
            pass  # cut off

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    try:
        closed = connection.recv(4096) == b""
    except ConnectionResetError:
        closed = True
    finally:
        connection.close()
        server.shutdown()
        server.server_close()
    assert closed
    assert time.monotonic() - started < 4


def test_an_unreadable_state_is_never_taken_for_an_empty_one(tmp_path):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"format": "reviewapp.witness-state/1", "logs": {"o": {"size": -1,
                    "root": base64.b64encode(bytes(32)).decode()}}}))  # fmt: skip
    with pytest.raises(StateError):
        WitnessState(path)
