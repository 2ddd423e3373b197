"""Decisions and evidence enter the ledger as they are stored; checkpoints sign the tree."""

import base64
import io
import json
import threading

import pytest
from django.core.management import call_command
from django.db import connection

from reviewapp.core import merkle
from reviewapp.ledger import services
from reviewapp.ledger.keys import server_signer
from reviewapp.ledger.models import LedgerCheckpoint, LedgerEntry, LedgerNode
from reviewapp.ledger.tasks import ledger_checkpoint, ledger_witness_submit
from reviewapp.review.in_ledger.status import decision_ledger_status, ledger_position_for_decision
from reviewapp.review.models import Decision, Evidence
from tests.ledger.helpers import decide, entry_of
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db


def test_every_decision_and_piece_of_evidence_is_appended_in_order():
    proposals = decide(3)
    entries = list(LedgerEntry.objects.order_by("leaf_index"))
    assert [e.leaf_index for e in entries] == list(range(6))
    assert [e.kind for e in entries] == ["evidence", "decision"] * 3
    for proposal, (evidence_entry, decision_entry) in zip(
        proposals, zip(entries[::2], entries[1::2], strict=True), strict=True
    ):
        assert decision_entry.decision_id == proposal.decision.pk
        assert evidence_entry.evidence_id == proposal.evidence.get().pk


def test_the_leaf_is_over_the_exact_signed_bytes_and_signature():
    decision = decide(1)[0].decision
    entry = entry_of(decision)
    assert json.loads(entry.entry) == {
        "kind": "decision",
        "payload": decision.payload,
        "signature": decision.signature,
        "key_id": decision.key_id,
    }
    expected = merkle.entry_bytes("decision", decision.payload, decision.signature, decision.key_id)
    assert entry.entry.encode() == expected
    assert entry.leaf_hash == merkle.leaf_hash(expected).hex()


def test_stored_subtrees_give_the_same_root_and_proofs_as_the_whole_tree():
    decide(5)  # 10 entries
    services.checkpoint_create()
    leaves = [bytes.fromhex(h) for h in LedgerEntry.objects.values_list("leaf_hash", flat=True)]
    tree = merkle.MemoryTree(leaves)
    stored = {
        (level, index): h
        for level, index, h in LedgerNode.objects.values_list("level", "node_index", "hash")
    }
    assert stored == {key: h.hex() for key, h in tree.nodes.items() if key[0] > 0}
    for size in range(0, 11):
        assert services.root_at(size) == tree.root(size)
    for size in range(1, 11):
        for index in range(size):
            assert services.inclusion_proof(index, size) == tree.inclusion_proof(index, size)
        for old in range(0, size + 1):
            assert services.consistency_proof(old, size) == tree.consistency_proof(old, size)


def _stored_nodes() -> dict:
    return {
        (level, index): h
        for level, index, h in LedgerNode.objects.values_list("level", "node_index", "hash")
    }


def _whole_tree_nodes() -> dict:
    leaves = [bytes.fromhex(h) for h in LedgerEntry.objects.values_list("leaf_hash", flat=True)]
    return {key: h.hex() for key, h in merkle.MemoryTree(leaves).nodes.items() if key[0] > 0}


def test_an_append_only_sequences_its_entries_and_the_checkpoint_integrates_them():
    decide(2)  # 4 entries
    assert not LedgerNode.objects.exists()
    assert services.integrated_size() == 0
    with pytest.raises(merkle.ProofError, match="next checkpoint"):
        services.inclusion_proof(0, 4)
    services.checkpoint_create()
    assert services.integrated_size() == 4
    assert _stored_nodes() == _whole_tree_nodes()


def test_integration_resumes_from_the_last_checkpoint():
    decide(3)  # 6 entries
    services.checkpoint_create()
    decide(2)  # 10
    services.checkpoint_create()
    assert _stored_nodes() == _whole_tree_nodes()
    assert LedgerCheckpoint.objects.get(tree_size=10).root_hash == services.root_at(10).hex()


def test_integration_keeps_equal_subtrees_stored_before_it_ran():
    decide(2)
    # As a ledger appended before integration was deferred has them.
    LedgerNode.objects.bulk_create(
        LedgerNode(level=level, node_index=index, hash=h)
        for (level, index), h in _whole_tree_nodes().items()
    )
    checkpoint = services.checkpoint_create()
    assert checkpoint.tree_size == 4
    assert _stored_nodes() == _whole_tree_nodes()


def test_integration_refuses_a_stored_subtree_that_its_entries_contradict():
    decide(2)
    LedgerNode.objects.create(level=1, node_index=0, hash="ab" * 32)
    with pytest.raises(LookupError, match=r"level 1, index 0\) is stored with another hash"):
        services.checkpoint_create()
    assert not LedgerCheckpoint.objects.exists()


def test_a_crash_before_the_checkpoint_commits_leaves_nothing_integrated(monkeypatch):
    decide(2)

    def crash(**kwargs):
        raise RuntimeError("worker killed")

    monkeypatch.setattr(services.checkpoints, "checkpoint_witness", crash)
    with pytest.raises(RuntimeError):
        services.checkpoint_create()
    assert not LedgerNode.objects.exists() and not LedgerCheckpoint.objects.exists()
    monkeypatch.undo()
    assert services.checkpoint_create().tree_size == 4
    assert _stored_nodes() == _whole_tree_nodes()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite's IMMEDIATE transactions serialise them"
)
@pytest.mark.django_db(transaction=True)
def test_two_integrators_at_once_take_turns_and_store_each_subtree_once(monkeypatch):
    decide(3)  # 6 entries
    inside, release = threading.Event(), threading.Event()
    witness = services.checkpoints.checkpoint_witness

    def slow_witness(**kwargs):
        if threading.current_thread().name == "first":
            inside.set()  # integrated, not yet committed
            release.wait(10)
        return witness(**kwargs)

    monkeypatch.setattr(services.checkpoints, "checkpoint_witness", slow_witness)
    signed = {}

    def integrate():
        try:
            signed[threading.current_thread().name] = services.checkpoint_create(only_if_grown=True)
        finally:
            connection.close()

    first = threading.Thread(target=integrate, name="first")
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=integrate, name="second")
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting for the first's lock
    release.set()
    first.join(10)
    second.join(10)
    assert signed["first"].tree_size == 6 and signed["second"] is None
    assert LedgerCheckpoint.objects.count() == 1
    assert _stored_nodes() == _whole_tree_nodes()


def test_a_proof_beyond_the_tree_is_refused():
    decide(1)
    with pytest.raises(merkle.ProofError):
        services.inclusion_proof(0, 3)
    with pytest.raises(merkle.ProofError):
        services.consistency_proof(1, 3)


def test_a_checkpoint_is_a_signed_c2sp_note_over_the_current_tree():
    decide(2)
    checkpoint = services.checkpoint_create()
    signer = server_signer()
    opened = merkle.open_checkpoint(checkpoint.note, [signer.public_key])
    assert opened.origin == checkpoint.origin == services.DEFAULT_ORIGIN
    assert opened.size == checkpoint.tree_size == 4
    assert opened.root_hex == checkpoint.root_hash == services.root_at(4).hex()
    assert opened.timestamp == checkpoint.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = checkpoint.note.split("\n")
    assert lines[:3] == [
        services.DEFAULT_ORIGIN,
        "4",
        base64.b64encode(services.root_at(4)).decode(),
    ]
    assert lines[4] == "" and lines[5].startswith(f"\u2014 {services.DEFAULT_ORIGIN} ")


def test_the_origin_comes_from_settings(settings):
    settings.REVIEWAPP_LEDGER_ORIGIN = "reviews.example.org/ledger"
    checkpoint = services.checkpoint_create()
    assert checkpoint.note.startswith("reviews.example.org/ledger\n0\n")


def test_witnesses_are_asked_only_when_the_ledger_grew(
    settings, monkeypatch, django_capture_on_commit_callbacks
):
    """Checkpoints every 30 s cost the witnesses nothing while nothing is appended."""
    from tests.ledger.helpers import Witness

    witness = Witness("w.example/w", b"w" * 32)
    settings.REVIEWAPP_LEDGER_WITNESSES = [(witness.vkey, "http://127.0.0.1:9")]
    asked = []
    monkeypatch.setattr(ledger_witness_submit, "delay", lambda *args: asked.append(args))

    for grow in (True, False, False, True, False):
        if grow:
            decide(1)
        with django_capture_on_commit_callbacks(execute=True):
            ledger_checkpoint()

    assert len(asked) == 2


def test_the_periodic_task_signs_only_when_the_ledger_grew():
    assert ledger_checkpoint() == 0  # the empty tree is a tree too
    assert ledger_checkpoint() is None
    decide(1)
    assert ledger_checkpoint() == 2
    assert ledger_checkpoint() is None
    assert list(LedgerCheckpoint.objects.order_by("id").values_list("tree_size", flat=True)) == [
        0,
        2,
    ]


def test_the_checkpoint_command_prints_the_signed_note():
    decide(1)
    out = io.StringIO()
    call_command("ledger_checkpoint", stdout=out)
    assert out.getvalue() == LedgerCheckpoint.objects.get().note
    out = io.StringIO()
    call_command("ledger_checkpoint", "--if-grown", stdout=out)
    assert "unchanged" in out.getvalue()
    assert LedgerCheckpoint.objects.count() == 1


def test_position_and_status_for_the_proposal_page():
    proposals = decide(2)
    decision = proposals[1].decision
    assert ledger_position_for_decision(decision) == 3
    status = decision_ledger_status(decision)
    assert (status.position, status.verified, status.checkpoint_size) == (3, True, None)
    assert "not yet covered" in status.detail
    services.checkpoint_create()
    status = decision_ledger_status(decision)
    assert (status.verified, status.checkpoint_size) == (True, 4)
    assert "inclusion in checkpoint 4 verified" in status.detail


def test_status_reports_a_decision_edited_behind_the_ledger():
    decision = decide(1)[0].decision
    services.checkpoint_create()
    tampered = decision.payload.replace('"approved"', '"rejected"')
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(payload=tampered)
    decision.refresh_from_db()
    status = decision_ledger_status(decision)
    assert not status.verified and "differs from its ledger entry" in status.detail


def test_a_decision_not_in_the_ledger_has_no_position():
    decision = decide(1)[0].decision
    with tampering():
        LedgerEntry.objects.filter(decision_id=decision.pk).delete()
    assert ledger_position_for_decision(decision) is None
    assert decision_ledger_status(decision).detail == "not in the ledger"


def test_evidence_enters_the_ledger_with_its_decision_and_once():
    from reviewapp.review.services.finalize import proposal_finalize

    proposal = decide(1)[0]
    assert proposal_finalize(proposal_id=proposal.pk) is None  # a re-delivered final step
    kinds = list(LedgerEntry.objects.order_by("leaf_index").values_list("kind", flat=True))
    assert kinds == ["evidence", "decision"]
    assert Evidence.objects.count() == 1


def _undecided():
    from tests.factories import LensFactory, PanelFactory
    from tests.review.helpers import submit

    return submit(PanelFactory(lenses=[LensFactory()], need=1), "undecided")


def _system_decision(proposal):
    from reviewapp.review.services.decisions import decision_append

    return decision_append(
        proposal=proposal, outcome="approved", basis="system", rationale="Checked.", evidence=[]
    )


def test_a_decision_is_stored_signed_with_no_index_until_the_sequencer_gives_it_the_next():
    decide(1)  # entries 0 and 1
    decision = _system_decision(_undecided())
    entry = entry_of(decision)
    assert entry.leaf_index is None and entry.leaf_hash
    assert decision_ledger_status(decision).detail == (
        "signature verified; its ledger index is being assigned"
    )
    assert services.ledger_sequence() == 1
    entry.refresh_from_db()
    assert entry.leaf_index == 2 and entry.sequenced_at is not None


def test_the_sequencer_numbers_a_batch_in_the_order_its_entries_were_stored():
    decisions = [_system_decision(_undecided()) for _ in range(5)]
    assert services.ledger_sequence_batch(limit=3) == 3
    assert services.ledger_sequence() == 2
    indexes = [entry_of(d).leaf_index for d in decisions]
    assert indexes == list(range(5))


def test_the_sequencer_is_woken_once_when_the_decisions_transaction_commits(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        decision = _system_decision(_undecided())
    assert len([c for c in callbacks if "sequence" in c.__qualname__]) == 1
    assert entry_of(decision).leaf_index == 0


def test_a_rolled_back_decision_leaves_no_entry():
    from django.db import transaction

    proposal = _undecided()
    with pytest.raises(RuntimeError), transaction.atomic():
        _system_decision(proposal)
        raise RuntimeError("the caller's transaction fails after the decision")
    assert not LedgerEntry.objects.exists() and not Decision.objects.exists()
    assert services.ledger_sequence() == 0


def test_the_database_refuses_a_second_index_for_an_entry():
    from django.db import IntegrityError, transaction

    decide(1)
    with pytest.raises(IntegrityError, match="UPDATE on ledger_entry refused"):
        with transaction.atomic():
            LedgerEntry.objects.filter(leaf_index=1).update(leaf_index=7)
    assert list(LedgerEntry.objects.values_list("leaf_index", flat=True)) == [0, 1]


def test_the_database_refuses_an_index_already_taken():
    from django.db import IntegrityError, transaction

    decide(1)
    decision = _system_decision(_undecided())
    with pytest.raises(IntegrityError), transaction.atomic():
        LedgerEntry.objects.filter(decision_id=decision.pk).update(leaf_index=1)
    assert entry_of(decision).leaf_index is None


def test_sequencing_changes_nothing_of_an_entry_but_its_index():
    from django.db import IntegrityError, transaction

    decision = _system_decision(_undecided())
    with pytest.raises(IntegrityError, match="UPDATE on ledger_entry refused"):
        with transaction.atomic():
            LedgerEntry.objects.filter(decision_id=decision.pk).update(
                leaf_index=0, leaf_hash="0" * 64
            )
