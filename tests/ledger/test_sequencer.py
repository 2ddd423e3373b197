"""The sequencer against real commits on PostgreSQL: concurrent appenders, and a sequencer
killed in the middle of its batch."""

import hashlib
import os
import signal
import subprocess
import sys
import threading

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewapp.core.signing import Signer
from reviewapp.ledger import services
from reviewapp.ledger.models import LedgerEntry
from reviewapp.review.in_ledger.verification import ledger_verify
from reviewapp.review.models import Decision, Proposal
from reviewapp.review.services.decisions import decision_append
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import submit
from tests.support import worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("sequencer")]


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("concurrent sequencing is PostgreSQL's (SQLite has one writer)")


def _fold(leaves: list[bytes]) -> bytes:
    """RFC 6962's MTH, written out here: nothing of the server's tree code."""
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + _fold(leaves[:split]) + _fold(leaves[split:])).digest()


def _proposals(count: int) -> list[int]:
    panel = PanelFactory(lenses=[LensFactory()], need=1)
    return [submit(panel, f"Concurrent answer {i}.").pk for i in range(count)]


def _append_all(ids: list[int], signer: Signer, errors: list) -> None:
    """One appender: each decision in its own transaction, whose commit wakes the sequencer."""
    try:
        for proposal in Proposal.objects.filter(pk__in=ids).order_by("pk"):
            decision_append(
                proposal=proposal, outcome="approved", basis="system", rationale="ok",
                signer=signer, evidence=[], lenses=[],
            )  # fmt: skip
    except Exception as exc:  # reported by the test, not lost in the thread
        errors.append(exc)
    finally:
        connection.close()


def _assert_log_is_whole(expected: int) -> None:
    rows = list(LedgerEntry.objects.order_by("leaf_index").values_list("leaf_index", "leaf_hash"))
    assert [index for index, _ in rows] == list(range(expected))  # contiguous, none twice
    assert LedgerEntry.objects.values("decision_id").distinct().count() == expected
    checkpoint = services.checkpoint_create()
    assert checkpoint.root_hash == _fold([bytes.fromhex(h) for _, h in rows]).hex()


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(appenders=st.integers(2, 8), each=st.integers(1, 12))
def test_concurrent_appenders_give_a_contiguous_log_whose_tree_matches_a_fold(appenders, each):
    before = LedgerEntry.objects.count()
    ids = _proposals(appenders * each)
    signer = Signer.generate()
    errors: list = []
    threads = [
        threading.Thread(target=_append_all, args=(ids[i::appenders], signer, errors))
        for i in range(appenders)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and not any(t.is_alive() for t in threads)
    # Each commit woke the sequencer: nothing is left waiting for its index.
    assert services.sequencer_backlog().waiting == 0
    _assert_log_is_whole(before + appenders * each)


def test_concurrent_appenders_leave_a_log_verify_ledger_passes(settings):
    settings.REVIEWAPP_TRUST_OWN_KEY = True
    ids = _proposals(24)
    from reviewapp.ledger.keys import server_signer

    errors: list = []
    threads = [
        threading.Thread(target=_append_all, args=(ids[i::4], server_signer(), errors))
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    _assert_log_is_whole(24)
    result = ledger_verify()
    assert result.ok, result.problem


# The child: the real sequencer, stopped (waiting on its stdin) right after its batch's
# statement: in a transaction (argv[1] == "transaction") before its COMMIT; outside one,
# with the batch committed and the session's lock still held.
_KILLED_SEQUENCER = """
import sys, django
django.setup()
from django.db import connection, transaction
from reviewapp.ledger.services import ledger_sequence

def pause_after_sequencing(execute, sql, params, many, context):
    result = execute(sql, params, many, context)
    if sql.lstrip().startswith("WITH base AS"):
        print("sequenced", flush=True)
        sys.stdin.readline()  # the test kills this process here
    return result

with connection.execute_wrapper(pause_after_sequencing):
    if sys.argv[1] == "transaction":
        with transaction.atomic():
            ledger_sequence()
    else:
        ledger_sequence()
"""


def _sequencer_killed_after_its_batch(where: str) -> tuple[int, int]:
    """Start the child, wait for its batch, kill it: the entries waiting before and after."""
    waiting = services.sequencer_backlog().waiting
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_SEQUENCER, where],
        cwd=worker.ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": worker.test_database_url(),
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "sequenced"
        waiting_after_batch = services.sequencer_backlog().waiting
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    return waiting, waiting_after_batch


def _decide(panel, content: str) -> Decision:
    return decision_append(
        proposal=submit(panel, content), outcome="approved", basis="system", rationale="ok",
        evidence=[], lenses=[],
    )  # fmt: skip


def test_a_sequencer_killed_mid_batch_loses_and_duplicates_nothing(monkeypatch):
    panel = PanelFactory(lenses=[LensFactory()], need=1)
    for i in range(3):
        _decide(panel, f"Answer {i}.")  # sequenced as each commits
    with monkeypatch.context() as asleep:  # commits that wake no sequencer
        asleep.setattr("reviewapp.ledger.services.append.sequence_after_commit", lambda: None)
        for i in range(4):
            _decide(panel, f"Later answer {i}.")
    assert services.sequencer_backlog().waiting == 4
    # What the child numbered is not committed: the entries still wait.
    assert _sequencer_killed_after_its_batch("transaction") == (4, 4)
    assert services.ledger_sequence() == 4  # its lock went with its connection
    _assert_log_is_whole(7)


def test_a_sequencer_killed_holding_its_session_lock_keeps_its_batch_and_frees_the_lock(
    monkeypatch,
):
    panel = PanelFactory(lenses=[LensFactory()], need=1)
    with monkeypatch.context() as asleep:  # commits that wake no sequencer
        asleep.setattr("reviewapp.ledger.services.append.sequence_after_commit", lambda: None)
        for i in range(3):
            _decide(panel, f"Answer {i}.")
    # Outside a transaction the batch commits by itself, before the lock is let go.
    assert _sequencer_killed_after_its_batch("session") == (3, 0)
    _decide(panel, "After the kill.")  # its commit's sequencer takes the freed lock
    assert services.sequencer_backlog().waiting == 0
    _assert_log_is_whole(4)


def test_a_commit_finding_the_lock_held_leaves_its_entry_to_the_holder():
    from reviewapp.ledger.services import sequence

    panel = PanelFactory(lenses=[LensFactory()], need=1)
    holder = threading.Event()
    release = threading.Event()

    def hold_the_lock():
        from django.db import connections

        try:
            assert sequence._lock(wait=True, session=True)
            holder.set()
            release.wait(30)
            sequence._unlock()
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold_the_lock)
    thread.start()
    try:
        assert holder.wait(30)
        _decide(panel, "While another sequencer holds the lock.")
        assert services.sequencer_backlog().waiting == 1  # one statement tried, and left it
    finally:
        release.set()
        thread.join(30)
    assert services.ledger_sequence() == 1
    _assert_log_is_whole(1)
