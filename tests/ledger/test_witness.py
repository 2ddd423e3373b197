"""Issue 15 point 4: deleting records together with their checkpoints no longer goes unnoticed.

The attack: delete a FAIL evidence entry (or the tail decision) and the
checkpoints covering it, then let the next checkpoint be signed. The witness
log outside the database still holds the deleted checkpoints, and every
decision's signed evidence digests must be in the ledger.
"""

import http.server
import io
import json
import socket
import threading
import time

import httpx
import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from reviewapp.ledger import services
from reviewapp.ledger.models import LedgerCheckpoint, LedgerEntry
from reviewapp.ledger.tasks import ledger_witness_post
from reviewapp.review.in_ledger.status import decision_ledger_status
from reviewapp.review.models import Decision, Evidence
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.ledger.helpers import (
    decide,
    export,
    public_key_b64,
    rebuild_tree,
    run_offline_verifier,
)
from tests.review.helpers import evaluate_in_process, judgement, submit
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db


@pytest.fixture
def witness(settings, tmp_path):
    path = tmp_path / "ledger-witness.jsonl"
    settings.REVIEWAPP_LEDGER_WITNESS_FILE = str(path)
    return path


@pytest.fixture
def checkpoint(django_capture_on_commit_callbacks):
    """Sign a checkpoint and run what happens after its commit (the witness append)."""

    def sign():
        with django_capture_on_commit_callbacks(execute=True):
            return services.checkpoint_create()

    return sign


def verify_ledger_fails() -> str:
    with pytest.raises(CommandError) as excinfo:
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    return str(excinfo.value)


def offline(path, *args):
    return run_offline_verifier(path, "--public-key", public_key_b64(), *args)


def test_every_signed_checkpoint_is_appended_to_the_witness_log(witness, checkpoint):
    decide(1)
    first = checkpoint()
    decide(1)
    second = checkpoint()
    lines = [json.loads(line) for line in witness.read_text().splitlines()]
    assert lines == [
        {"tree_size": 2, "checkpoint": first.note},
        {"tree_size": 4, "checkpoint": second.note},
    ]


def test_a_checkpoint_is_witnessed_only_once_its_transaction_commits(
    witness, django_capture_on_commit_callbacks
):
    decide(1)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.checkpoint_create()
    assert not witness.exists()  # nothing before the commit
    assert len(callbacks) == 1


def test_an_untouched_ledger_verifies_against_its_witness(witness, checkpoint):
    decide(2)
    checkpoint()
    out, err = io.StringIO(), io.StringIO()
    call_command("verify_ledger", stdout=out, stderr=err)
    assert "4 ledger entries verified" in out.getvalue()
    assert "2 signed checkpoints" in out.getvalue()  # the stored one and its witnessed copy
    assert err.getvalue() == ""


def test_a_checkpoint_missing_from_the_witness_log_is_reported(witness, checkpoint):
    decide(1)
    checkpoint()
    decide(1)
    services.checkpoint_create()  # its commit callbacks never ran: never witnessed
    err = io.StringIO()
    call_command("verify_ledger", stdout=io.StringIO(), stderr=err)
    assert "1 checkpoint(s) are not in the witness log (sizes 4)" in err.getvalue()


def _delete_tail_decision() -> None:
    """Delete the last decision and its ledger entry, the checkpoints covering it, and
    rebuild the tree, as a database administrator with the triggers off could."""
    last = Decision.objects.order_by("-pk").first()
    with tampering():
        LedgerEntry.objects.filter(decision_id=last.pk).delete()
        Decision.objects.filter(pk=last.pk).delete()
        rebuild_tree()
        LedgerCheckpoint.objects.all().delete()


def test_deleting_the_tail_decision_and_its_checkpoints_fails_verify_ledger(witness, checkpoint):
    decide(3)
    checkpoint()
    _delete_tail_decision()
    checkpoint()  # the next periodic checkpoint, over the shortened tree
    problem = verify_ledger_fails()
    assert f"witness log {witness} line 1" in problem
    assert "signed for size 6, but the ledger holds only 5 entries: entries were removed" in (
        problem
    )


def test_deleting_the_tail_decision_and_its_checkpoints_fails_the_offline_verifier(
    witness, checkpoint, tmp_path
):
    decide(3)
    checkpoint()
    _delete_tail_decision()
    checkpoint()
    path = export(tmp_path, checkpoint=False)
    assert offline(path).returncode == 0  # the export alone is consistent with itself ...
    result = offline(path, "--witness", witness)  # ... the witness log is not
    assert result.returncode == 1
    assert f"FAIL witness log {witness} line 1" in result.stderr
    assert "checkpoint for size 6, but the export ends at size 5" in result.stderr


def test_a_shortened_tree_grown_back_past_the_witnessed_size_still_fails(witness, checkpoint):
    decide(3)
    checkpoint()
    _delete_tail_decision()
    decide(1)  # the tree is size 7 again: it must still have the witnessed root at 6
    checkpoint()
    problem = verify_ledger_fails()
    assert f"witness log {witness} line 1" in problem
    assert "checkpoint for size 6 has root" in problem


def _decide_with_a_failing_checker():
    """e0 d0 (pass), e1 d1 (the checker fails: rejected), e2 d2 (pass)."""
    decide(1)
    content = "Answer: the migration drops a column."
    lens = LensFactory()
    recorded(lens, content, judgement("pass", "looks fine"))
    failing = CheckerFactory(settings={"pattern": "never-present", "must_match": True})
    panel = PanelFactory(lenses=[lens], need=1, checkers=[failing])
    rejected = evaluate_in_process(submit(panel, content))
    decide(1)
    return rejected, failing


def _delete_evidence_entry(evidence: Evidence) -> None:
    """Delete one evidence entry and renumber the ledger after it, rebuilding the tree."""
    with tampering():
        gone = LedgerEntry.objects.get(evidence_id=evidence.pk)
        gone.delete()
        Evidence.objects.filter(pk=evidence.pk).delete()
        for entry in LedgerEntry.objects.filter(leaf_index__gt=gone.leaf_index).order_by(
            "leaf_index"
        ):
            LedgerEntry.objects.filter(pk=entry.pk).update(leaf_index=entry.leaf_index - 1)
        rebuild_tree()
        LedgerCheckpoint.objects.all().delete()


@pytest.fixture
def fail_evidence_deleted(witness, checkpoint):
    rejected, failing = _decide_with_a_failing_checker()
    assert rejected.decision.outcome == "rejected"
    evidence = Evidence.objects.get(proposal=rejected, checker_name=failing.name)
    assert evidence.verdict == "fail"
    checkpoint()
    _delete_evidence_entry(evidence)
    checkpoint()
    return rejected, failing


def test_deleting_a_fail_evidence_entry_fails_verify_ledger(fail_evidence_deleted):
    rejected, failing = fail_evidence_deleted
    problem = verify_ledger_fails()
    assert f"decision {rejected.decision.pk}" in problem
    assert f"its signed evidence from {failing.name}" in problem
    assert "is not in the ledger before it: evidence was removed" in problem


def test_deleting_a_fail_evidence_entry_fails_the_offline_verifier(fail_evidence_deleted, tmp_path):
    rejected, failing = fail_evidence_deleted
    result = offline(export(tmp_path, checkpoint=False))
    assert result.returncode == 1
    assert f"decision for proposal {rejected.pk}" in result.stderr
    assert f"its signed evidence from {failing.name}" in result.stderr


def test_an_export_without_any_checkpoint_fails_unless_told(tmp_path):
    decide(1)
    path = export(tmp_path, checkpoint=False)
    result = offline(path)
    assert result.returncode == 1
    assert "carries no signed checkpoint" in result.stderr and "--no-checkpoint" in result.stderr
    result = offline(path, "--no-checkpoint")
    assert result.returncode == 0, result.stderr
    assert "warning: no signed checkpoint" in result.stderr


class _Witness(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.headers["Content-Type"], body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_checkpoints_are_posted_to_a_witness_url(settings, checkpoint, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Witness)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    enqueued = []
    monkeypatch.setattr(ledger_witness_post, "delay", enqueued.append)
    try:
        settings.REVIEWAPP_LEDGER_WITNESS_FILE = ""
        settings.REVIEWAPP_LEDGER_WITNESS_URL = f"http://127.0.0.1:{server.server_port}/witness"
        decide(1)
        signed = checkpoint()
        assert enqueued == [signed.pk]  # after the commit, as a task: never in the request
        ledger_witness_post(signed.pk)  # what the worker runs for it
    finally:
        server.shutdown()
    assert ("text/plain; charset=utf-8", signed.note.encode()) in _Witness.received


def test_a_witness_that_never_answers_holds_the_task_for_seconds_not_forever(settings):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    try:
        settings.REVIEWAPP_LEDGER_WITNESS_URL = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        decide(1)
        signed = services.checkpoint_create()
        started = time.monotonic()
        with pytest.raises(httpx.TimeoutException):
            ledger_witness_post(signed.pk)  # called directly, a retry re-raises
        assert time.monotonic() - started < 10
    finally:
        silent.close()


def test_a_rolled_back_checkpoint_is_never_witnessed(witness, django_capture_on_commit_callbacks):
    decide(1)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            services.checkpoint_create()
            raise RuntimeError("the caller's transaction fails")
    assert not witness.exists()


def test_deleting_a_fail_evidence_entry_fails_the_proposal_pages_verify(fail_evidence_deleted):
    rejected, failing = fail_evidence_deleted
    status = decision_ledger_status(Decision.objects.get(proposal=rejected))
    assert not status.verified
    assert status.detail == f"its signed evidence from {failing.name} is not in the ledger"


def test_in_production_checkpoints_with_no_witness_log_configured_fail_verify_ledger(
    settings, checkpoint
):
    settings.REVIEWAPP_LEDGER_REQUIRE_WITNESS = True
    settings.REVIEWAPP_LEDGER_WITNESS_FILE = ""
    decide(1)
    checkpoint()
    assert "no witness log is configured" in verify_ledger_fails()


def test_in_production_a_witness_log_that_is_not_there_fails_verify_ledger(
    settings, checkpoint, tmp_path
):
    settings.REVIEWAPP_LEDGER_REQUIRE_WITNESS = True
    decide(1)
    checkpoint()  # witnessed nowhere: the setting is still empty
    settings.REVIEWAPP_LEDGER_WITNESS_FILE = str(tmp_path / "lost-with-its-container.jsonl")
    assert "no witness log at" in verify_ledger_fails()


def test_in_production_a_witness_log_passed_by_hand_is_enough(settings, witness, checkpoint):
    decide(1)
    checkpoint()
    settings.REVIEWAPP_LEDGER_REQUIRE_WITNESS = True
    settings.REVIEWAPP_LEDGER_WITNESS_FILE = ""
    call_command("verify_ledger", "--witness", str(witness), stdout=io.StringIO())


def test_before_any_checkpoint_production_needs_no_witness_log(settings):
    settings.REVIEWAPP_LEDGER_REQUIRE_WITNESS = True
    settings.REVIEWAPP_LEDGER_WITNESS_FILE = ""
    decide(1)
    call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
