"""Issue 34: the ledger witnessed by C2SP witnesses — the app's submission task against real
`run_witness` processes on loopback, and verifiers holding checkpoints to a witness policy.

Cosignatures are checked with tests/support/c2sp_cosignature.py, written from the
specification and sharing no code with the server.
"""

import base64
import io
import json
import re
import time
import tracemalloc

import httpx
import pytest
import zstandard
from django.core.management import CommandError, call_command

from reviewapp.core import cosignature, merkle
from reviewapp.ledger import cosigning, services
from reviewapp.ledger.cosigning import witness_rows, witness_submit
from reviewapp.ledger.models import LedgerCosignature, LedgerEntry, LedgerWitness
from reviewapp.ledger.tasks import ledger_witness_catch_up, ledger_witness_submit
from reviewapp.review.in_ledger.status import decision_ledger_status
from reviewapp.review.models import Decision
from tests.conftest import wait_for
from tests.ledger.helpers import decide, rebuild_tree
from tests.support import c2sp_cosignature as spec
from tests.support.hostile_witness import HostileWitness, answer
from tests.support.memory_log import MemoryLog
from tests.support.ports import restartable_port
from tests.support.tamper import tampering
from tests.support.witness_process import WitnessProcess

pytestmark = pytest.mark.django_db


def our_vkey() -> str:
    """This log's verifier key, as an operator hands it to a witness."""
    out = io.StringIO()
    call_command("ledger_keys", "--vkey", stdout=out)
    return out.getvalue().split()[0]


def public_key_of(vkey: str) -> bytes:
    """Read a vkey the way the specification spells it (not with the code under test)."""
    return base64.b64decode(vkey.split("+", 2)[2])[1:]


@pytest.fixture
def start_witness(tmp_path):
    started = []

    def start(name, logs=None, *, again=None):
        """A witness; ``again``: the same witness (key, state, port) started once more."""
        logs = [our_vkey()] if logs is None else logs
        if again is None:
            witness = WitnessProcess(
                tmp_path / name.replace("/", "_"), name, logs, port=restartable_port()
            )
        else:
            again.stop()
            witness = WitnessProcess(
                again.state.parent, name, logs, key=again.key_file, port=again.port
            )
        started.append(witness)
        return witness

    yield start
    for witness in started:
        witness.stop()


@pytest.fixture
def configure(settings):
    def configure(*witnesses, quorum=0):
        settings.REVIEWAPP_LEDGER_WITNESSES = [w.configured for w in witnesses]
        settings.REVIEWAPP_LEDGER_WITNESS_QUORUM = quorum

    return configure


@pytest.fixture
def signed(django_capture_on_commit_callbacks, monkeypatch):
    """Sign a checkpoint and run the submissions its commit enqueues, as the worker would."""

    def sign():
        enqueued = []
        monkeypatch.setattr(ledger_witness_submit, "delay", lambda *a: enqueued.append(a))
        with django_capture_on_commit_callbacks(execute=True):
            checkpoint = services.checkpoint_create()
        outcomes = [ledger_witness_submit(*args) for args in enqueued]
        return checkpoint, outcomes

    return sign


def row(witness) -> LedgerWitness:
    return LedgerWitness.objects.get(vkey=witness.vkey)


def submit(checkpoint, witness) -> str:
    return witness_submit(checkpoint_id=checkpoint.pk, witness_id=row(witness).pk)


def cosignature_lines(note: str, witness) -> list[str]:
    return [line for line in note.splitlines() if line.startswith(f"\u2014 {witness.name} ")]


def witness_state(witness) -> dict:
    return json.loads(witness.state.read_text())["logs"]


# ── being witnessed ──────────────────────────────────────────────────────────


def test_each_new_checkpoint_is_submitted_after_its_commit_and_cosigned(
    start_witness, configure, signed
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    checkpoint, outcomes = signed()
    assert outcomes == ["cosigned"]
    stored = LedgerCosignature.objects.get(checkpoint=checkpoint)
    body = spec.note_body(checkpoint.note)
    assert spec.verify_line(stored.line, witness.name, public_key_of(witness.vkey), body)
    assert witness_state(witness)[services.ledger_origin()]["size"] == 2
    assert row(witness).known_size == 2


def test_the_api_serves_the_checkpoint_with_every_cosignature(
    client, start_witness, configure, signed
):
    decide(1)
    witnesses = [start_witness("w1.example/w"), start_witness("w2.example/w")]
    configure(*witnesses)
    checkpoint, _ = signed()
    body = client.get("/api/ledger/checkpoint").json()
    note = body["checkpoint"]
    assert note.startswith(checkpoint.note)  # the log's own signature first
    assert [c["witness"] for c in body["cosignatures"]] == ["w1.example/w", "w2.example/w"]
    text = spec.note_body(note)
    for witness in witnesses:
        (line,) = cosignature_lines(note, witness)
        assert spec.verify_line(line, witness.name, public_key_of(witness.vkey), text)
    # Verifiers that know no witness still open it: unknown signatures are ignored.
    assert merkle.open_checkpoint(note, [public_key_of(our_vkey())]).size == 2


def test_the_tiles_checkpoint_carries_the_cosignatures_too(
    client, start_witness, configure, signed
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    signed()

    note = client.get("/ledger/checkpoint").content.decode()

    assert note == client.get("/api/ledger/checkpoint").json()["checkpoint"]
    (line,) = cosignature_lines(note, witness)
    assert spec.verify_line(line, witness.name, public_key_of(witness.vkey), spec.note_body(note))


def test_the_checkpoint_schema_says_the_note_carries_cosignatures(client):
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "cosignature" in schema["CheckpointOut"]["properties"]["checkpoint"]["description"]
    assert "cosignatures" in schema["CheckpointOut"]["required"]


def test_a_lost_record_is_resynced_from_the_witness_409(start_witness, configure, signed):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    signed()
    LedgerWitness.objects.filter(vkey=witness.vkey).update(known_size=0)  # e.g. a restore
    decide(1)
    checkpoint, outcomes = signed()
    assert outcomes == ["cosigned"]  # 409 "2", then from size 2 with the proof
    assert row(witness).known_size == 4
    assert LedgerCosignature.objects.filter(checkpoint=checkpoint).count() == 1


def test_the_witness_refuses_a_stale_checkpoint_with_its_latest_size(
    start_witness, configure, signed
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    stale = services.checkpoint_create()  # never submitted
    decide(1)
    signed()
    body = cosignature.add_checkpoint_body(2, [], stale.note)
    reply = httpx.post(f"{witness.url}/add-checkpoint", content=body)
    assert (reply.status_code, reply.headers["content-type"], reply.text) == (
        409,
        "text/x.tlog.size",
        "4\n",
    )
    LedgerWitness.objects.filter(vkey=witness.vkey).update(known_size=0)
    assert submit(stale, witness) == "superseded"  # resynced: the witness holds size 4
    assert row(witness).known_size == 4
    assert not row(witness).alert


def _fork_the_tail() -> None:
    """Replace the last entry with another decision, as a rewritten database would
    (its stored subtrees rebuilt to match)."""
    with tampering():
        last = LedgerEntry.objects.order_by("-leaf_index").first()
        LedgerEntry.objects.filter(pk=last.pk).delete()
        Decision.objects.filter(pk=last.decision_id).delete()
    decide(1)
    with tampering():
        rebuild_tree()


def test_a_forked_log_is_refused_by_the_witness_and_alerted(
    client, start_witness, configure, signed
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    signed()
    _fork_the_tail()
    checkpoint, outcomes = signed()
    assert outcomes == ["alert"]
    alert = row(witness).alert
    assert "refused the consistency proof from size 2 to 3 (HTTP 422)" in alert
    assert "do not reset the witness" in alert
    assert not LedgerCosignature.objects.filter(checkpoint=checkpoint).exists()
    assert witness_state(witness)[services.ledger_origin()]["size"] == 2  # not cosigned
    health = client.get("/healthz").json()
    assert health["status"] == "degraded"
    assert health["witnesses"]["ok"] is False
    assert health["witnesses"]["witnesses"][0]["alert"] == alert


def test_a_witness_ahead_of_our_tree_is_a_fork_alert(start_witness, configure, signed):
    decide(1)
    witness = start_witness("w1.example/w")
    witness.stop()
    # The witness cosigned size 9 of this origin: more than this database will ever have shown.
    root = base64.b64encode(bytes(32)).decode()
    witness.state.write_text(json.dumps({
        "format": "reviewapp.witness-state/1",
        "logs": {services.ledger_origin(): {"size": 9, "root": root}},
    }))  # fmt: skip
    witness = start_witness("w1.example/w", again=witness)
    configure(witness)
    _, outcomes = signed()
    assert outcomes == ["alert"]
    alert = row(witness).alert
    assert "has cosigned size 9 of this log" in alert
    assert "this database's latest checkpoint is of size 2" in alert


def test_a_witness_that_does_not_trust_our_key_is_a_403_alert(start_witness, configure, signed):
    decide(1)
    witness = start_witness("w1.example/w", logs=[MemoryLog(services.ledger_origin()).vkey])
    configure(witness)
    _, outcomes = signed()
    assert outcomes == ["alert"]
    assert "(HTTP 403)" in row(witness).alert and "ledger_keys --vkey" in row(witness).alert


def test_a_witness_that_does_not_know_our_origin_is_a_404_alert(start_witness, configure, signed):
    decide(1)
    witness = start_witness("w1.example/w", logs=[MemoryLog("other.example/log").vkey])
    configure(witness)
    _, outcomes = signed()
    assert outcomes == ["alert"]
    assert (
        f"does not witness the origin {services.ledger_origin()} (HTTP 404)" in row(witness).alert
    )


def test_an_alert_clears_once_the_witness_cosigns_again(
    start_witness, configure, signed, monkeypatch
):
    decide(1)
    witness = start_witness("w1.example/w", logs=[MemoryLog("other.example/log").vkey])
    configure(witness)
    _, outcomes = signed()
    assert outcomes == ["alert"]
    witness = start_witness("w1.example/w", again=witness)  # its operator added this log
    assert catch_up(monkeypatch) == ["cosigned"]
    assert row(witness).alert == ""


def catch_up(monkeypatch) -> list[str]:
    """Run the beat's catch-up, and the submissions it enqueues."""
    enqueued = []
    monkeypatch.setattr(ledger_witness_submit, "delay", lambda *a: enqueued.append(a))
    assert ledger_witness_catch_up() == len(enqueued)
    return [ledger_witness_submit(*args) for args in enqueued]


def test_an_unreachable_witness_is_caught_up_with_the_latest_checkpoint(
    start_witness, configure, signed, monkeypatch
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    witness.stop()
    _, outcomes = signed()
    assert outcomes == ["unreachable"]
    assert row(witness).unreachable and row(witness).unreachable_since
    decide(1)
    _, outcomes = signed()
    assert outcomes == ["unreachable"]
    back = start_witness("w1.example/w", again=witness)
    assert catch_up(monkeypatch) == ["cosigned"]
    assert row(back).known_size == 4  # straight to the latest
    assert (row(back).unreachable, row(back).unreachable_since) == ("", None)
    assert catch_up(monkeypatch) == []


def test_a_submission_is_idempotent(start_witness, configure, signed):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness)
    checkpoint, _ = signed()
    assert submit(checkpoint, witness) == "already"
    assert LedgerCosignature.objects.filter(checkpoint=checkpoint).count() == 1


# ── a hostile witness ────────────────────────────────────────────────────────


@pytest.fixture
def hostile(configure):
    """The one configured witness, answering as ``respond`` writes."""
    started = []

    def start(respond):
        witness = HostileWitness("hostile.example/w", respond)
        started.append(witness)
        configure(witness)
        return witness

    yield start
    for witness in started:
        witness.stop()


def answers(raw: bytes):
    return lambda witness, body, out: out.write(raw)


def test_a_409_whose_size_has_more_digits_than_any_tree_is_an_alert(hostile, signed):
    decide(1)
    witness = hostile(answers(answer(409, b"9" * 5000 + b"\n", "text/x.tlog.size")))

    _, outcomes = signed()

    assert outcomes == ["alert"]
    assert "answered 409 with a malformed size" in row(witness).alert


def test_a_409_naming_a_size_this_log_never_signed_is_an_alert_not_a_silent_skip(hostile):
    decide(1)
    witness = hostile(answers(answer(409, b"4\n", "text/x.tlog.size")))
    checkpoint = services.checkpoint_create()
    decide(1)  # entries 2 and 3: in the database, in no signed checkpoint
    witness_rows()

    assert submit(checkpoint, witness) == "alert"
    assert "has cosigned size 4 of this log" in row(witness).alert
    assert row(witness).known_size == 0


def test_a_409_naming_the_very_size_we_sent_is_an_alert(hostile, signed):
    decide(1)
    witness = hostile(answers(answer(409, b"0\n", "text/x.tlog.size")))  # we send `old 0`

    _, outcomes = signed()

    assert outcomes == ["alert"]
    assert "answered 409 naming size 0, the old size we sent" in row(witness).alert


def test_a_witness_naming_another_size_at_each_409_is_recorded_as_unreachable(hostile, signed):
    sizes = iter([b"2\n", b"0\n"])  # we resync to 2, send `old 2`, and it says 0
    decide(1)
    witness = hostile(lambda w, body, out: out.write(answer(409, next(sizes), "text/x.tlog.size")))

    _, outcomes = signed()

    assert outcomes == ["unreachable"]
    assert "answered 409 twice" in row(witness).unreachable
    assert row(witness).unreachable_since


def cosigns_at(timestamp: int):
    """A witness answering 200 with a valid cosignature of the checkpoint it was sent,
    timestamped `timestamp` (seconds since the epoch)."""

    def respond(witness, body, out):
        note = body.decode().split("\n\n", 1)[1]  # after `old N` and the proof lines
        line = spec.cosign(
            bytes(witness.signer._signing_key), witness.name, spec.note_body(note), timestamp
        )
        out.write(answer(200, (line + "\n").encode()))

    return respond


def test_a_cosignature_timestamped_far_in_the_future_is_refused_saying_why(hostile, signed):
    decide(1)
    witness = hostile(cosigns_at(2**63 - 1))

    _, outcomes = signed()

    assert outcomes == ["alert"]
    alert = row(witness).alert
    assert "timestamped 9223372036854775807" in alert and "in the future" in alert
    assert "clock" in alert
    assert not LedgerCosignature.objects.exists()


def test_a_cosignature_from_a_witness_whose_clock_is_a_little_ahead_is_kept(hostile, signed):
    decide(1)
    hostile(cosigns_at(int(time.time()) + 30))

    _, outcomes = signed()

    assert outcomes == ["cosigned"]
    assert LedgerCosignature.objects.count() == 1


def trickle(witness, body, out):
    """Headers a byte at a time, each well within the read timeout, for 10 s."""
    out.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    for _ in range(50):
        out.flush()
        time.sleep(0.2)
        out.write(b"a")


def test_a_witness_trickling_its_answer_is_given_up_on_at_the_deadline(
    hostile, signed, monkeypatch
):
    monkeypatch.setattr(cosigning, "ANSWER_DEADLINE_SECONDS", 1.0)
    decide(1)
    witness = hostile(trickle)
    started = time.monotonic()

    _, outcomes = signed()

    assert time.monotonic() - started < 5
    assert outcomes == ["unreachable"]
    assert "within 1 s" in row(witness).unreachable


def test_a_compressed_answer_is_never_inflated(hostile, signed):
    frame = zstandard.ZstdCompressor().compress(bytes(1 << 20))  # 1 MiB of zeros, a few bytes
    bomb = answer(200, frame * 64, Content_Encoding="zstd")  # 64 MiB once inflated
    decide(1)
    witness = hostile(answers(bomb))
    tracemalloc.start()
    try:
        _, outcomes = signed()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert outcomes == ["alert"]
    assert "without cosignature lines" in row(witness).alert
    assert peak < 8 * 1024 * 1024


# ── a second log, witnessed by the same witness ──────────────────────────────


def add(log: MemoryLog, witness, old: int, size: int) -> httpx.Response:
    return httpx.post(f"{witness.url}/add-checkpoint", content=log.body(old, size))


def test_one_witness_cosigns_two_logs_each_against_its_own_history(
    start_witness, configure, signed
):
    decide(1)
    second = MemoryLog("second.example/log")
    witness = start_witness("w1.example/w", logs=[our_vkey(), second.vkey])
    configure(witness)
    second.grow(5)
    reply = add(second, witness, 0, 5)
    assert reply.status_code == 200
    (line,) = reply.text.splitlines()
    text = spec.note_body(second.note(5))
    assert spec.verify_line(line, witness.name, public_key_of(witness.vkey), text)
    _, outcomes = signed()
    assert outcomes == ["cosigned"]
    second.grow(3)
    assert add(second, witness, 5, 8).status_code == 200
    assert (add(second, witness, 5, 8).status_code, add(second, witness, 0, 5).text) == (409, "8\n")
    state = witness_state(witness)
    assert (state[second.origin]["size"], state[services.ledger_origin()]["size"]) == (8, 2)


def test_a_second_log_signed_with_our_origin_but_its_own_key_is_refused(start_witness):
    decide(1)
    witness = start_witness("w1.example/w")
    impostor = MemoryLog(services.ledger_origin(), 2)
    assert add(impostor, witness, 0, 2).status_code == 403


# ── verifiers enforce the witness policy ─────────────────────────────────────


@pytest.fixture
def two_witnesses(start_witness, configure):
    decide(1)
    witnesses = [start_witness("w1.example/w"), start_witness("w2.example/w")]
    configure(*witnesses, quorum=2)
    return witnesses


def verify_ledger() -> str:
    out = io.StringIO()
    call_command("verify_ledger", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_verifiers_fail_naming_the_witnesses_missing_and_pass_with_enough(two_witnesses):
    w1, w2 = two_witnesses
    checkpoint = services.checkpoint_create()  # its commit's submissions never ran
    witness_rows()
    assert submit(checkpoint, w1) == "cosigned"
    missing = re.escape("cosigned by 1 of the 2 (of 2) witnesses required; missing: w2.example/w")
    with pytest.raises(CommandError, match=missing):
        verify_ledger()
    with pytest.raises(CommandError, match=missing):
        call_command("verify_decisions", stdout=io.StringIO())
    status = decision_ledger_status(Decision.objects.get())
    assert not status.verified and re.search(missing, status.detail)

    assert submit(checkpoint, w2) == "cosigned"
    assert "cosigned by w1.example/w, w2.example/w" in verify_ledger()
    call_command("verify_decisions", stdout=io.StringIO())
    status = decision_ledger_status(Decision.objects.get())
    assert status.verified, status.detail
    assert "cosigned by enough witnesses" in status.detail


def test_a_stored_cosignature_that_does_not_verify_fails_the_policy(two_witnesses):
    w1, w2 = two_witnesses
    checkpoint = services.checkpoint_create()
    witness_rows()
    assert submit(checkpoint, w1) == "cosigned"
    # A row written straight into the database, by a key that only borrows w2's name.
    forged = spec.cosign(bytes(32), w2.name, spec.note_body(checkpoint.note), 1700000000)
    LedgerCosignature.objects.create(
        checkpoint=checkpoint, witness=w2.name, key_id="00000000", timestamp=1, line=forged
    )
    with pytest.raises(CommandError, match="missing: w2.example/w"):
        verify_ledger()


def test_the_page_verifies_against_the_latest_cosigned_checkpoint(two_witnesses):
    checkpoint = services.checkpoint_create()
    for witness in two_witnesses:
        witness_rows()
        assert submit(checkpoint, witness) == "cosigned"
    decide(1)
    services.checkpoint_create()  # newer, not yet cosigned
    status = decision_ledger_status(Decision.objects.order_by("pk").first())
    assert status.verified, status.detail
    assert status.checkpoint_size == 2
    later = decision_ledger_status(Decision.objects.order_by("pk").last())
    assert not later.verified
    assert "not in a witnessed checkpoint: checkpoint 4: cosigned by 0 of the 2" in later.detail


def test_without_a_policy_an_uncosigned_checkpoint_verifies(settings):
    decide(1)
    services.checkpoint_create()
    assert "2 ledger entries verified" in verify_ledger()


# ── through a real worker ────────────────────────────────────────────────────


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_configured_from_the_environment_gets_each_checkpoint_cosigned(
    start_worker, start_witness, configure, client
):
    decide(1)
    witness = start_witness("w1.example/w")
    configure(witness, quorum=1)
    start_worker(extra_env={
        "REVIEWAPP_LEDGER_WITNESSES": f"# the team's witness\n{witness.vkey} {witness.url}/\n",
        "REVIEWAPP_LEDGER_WITNESS_QUORUM": "1",
    })  # fmt: skip
    checkpoint = services.checkpoint_create()  # committed at once: its submission is enqueued
    wait_for(
        lambda: LedgerCosignature.objects.filter(checkpoint=checkpoint).exists(),
        message="the worker never stored the witness's cosignature",
    )
    assert "cosigned by w1.example/w" in verify_ledger()
    note = client.get("/api/ledger/checkpoint").json()["checkpoint"]
    (line,) = cosignature_lines(note, witness)
    assert spec.verify_line(line, witness.name, public_key_of(witness.vkey), spec.note_body(note))


def test_a_witness_alert_is_listed_in_the_admin(admin_client):
    LedgerWitness.objects.create(
        vkey="w1.example/w+00000000+x", name="w1.example/w", alert="refused (HTTP 403): do this"
    )
    page = admin_client.get("/admin/ledger/ledgerwitness/")
    assert page.status_code == 200
    assert "refused (HTTP 403): do this" in page.content.decode()
