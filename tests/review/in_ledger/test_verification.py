"""`manage.py verify_ledger` catches every kind of tampering and names the first bad entry."""

import base64
import hashlib
import io
import json

import pytest
from django.core.management import CommandError, call_command
from nacl.signing import SigningKey

from reviewapp.core import merkle
from reviewapp.ledger import services
from reviewapp.ledger.keys import server_signer
from reviewapp.ledger.models import LedgerCheckpoint, LedgerEntry, LedgerNode
from reviewapp.review.in_ledger.status import decision_ledger_status
from reviewapp.review.in_ledger.verification import ledger_verify
from reviewapp.review.models import Decision, Evidence
from tests.ledger.helpers import decide, decide_chained_v1, entry_of
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger():
    proposals = decide(3)  # entries: e0 d0 e1 d1 e2 d2
    services.checkpoint_create()
    return [p.decision for p in proposals]


def verify_fails(match: str):
    with pytest.raises(CommandError, match=match) as excinfo:
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    return str(excinfo.value)


def rewrite_entry(entry: LedgerEntry, **fields) -> None:
    """Rewrite an entry consistently: new text, and the leaf hash that goes with it."""
    item = json.loads(entry.entry)
    item.update(fields)
    text = merkle.entry_bytes(item["kind"], item["payload"], item["signature"], item["key_id"])
    LedgerEntry.objects.filter(pk=entry.pk).update(
        entry=text.decode(), leaf_hash=merkle.leaf_hash(text).hex()
    )


def test_an_untouched_ledger_verifies(ledger):
    out, err = io.StringIO(), io.StringIO()
    call_command("verify_ledger", stdout=out, stderr=err)
    assert (
        "6 ledger entries verified (3 decisions, 3 evidence) and 1 signed checkpoints"
        in out.getvalue()
    )
    assert err.getvalue() == ""


def test_it_warns_about_entries_no_checkpoint_covers_yet(ledger):
    decide(1)
    err = io.StringIO()
    call_command("verify_ledger", stdout=io.StringIO(), stderr=err)
    assert "2 entries are not yet covered by a signed checkpoint" in err.getvalue()


def test_subtrees_are_required_up_to_the_latest_checkpoint_and_not_beyond(ledger):
    decide(1)  # entries 6 and 7: their subtrees are stored by the next checkpoint
    assert not LedgerNode.objects.filter(level=1, node_index=3).exists()
    call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    with tampering():
        LedgerNode.objects.filter(level=1, node_index=1).delete()
    verify_fails(r"their stored subtree hash \(level 1, index 1\) is missing")


def test_an_edited_outcome_is_named(ledger):
    with tampering():
        Decision.objects.filter(pk=ledger[1].pk).update(outcome="rejected")
    verify_fails(
        rf"ledger entry 3 \(decision {ledger[1].pk}, proposal {ledger[1].proposal_id}\): "
        rf"decision {ledger[1].pk} differs from its signed bytes in outcome"
    )


def test_an_edited_rationale_is_named(ledger):
    with tampering():
        Decision.objects.filter(pk=ledger[2].pk).update(rationale="Approved after a careful read.")
    verify_fails(r"ledger entry 5 .*differs from its signed bytes in rationale")


def test_edited_signed_bytes_rewritten_everywhere_fail_the_signature(ledger):
    """The thorough DBA: payload, hash column, ledger entry and leaf hash all rewritten."""
    decision = ledger[0]
    payload = decision.payload.replace('"approved"', '"rejected"')
    with tampering():
        Decision.objects.filter(pk=decision.pk).update(
            payload=payload,
            outcome="rejected",
            hash=hashlib.sha256(payload.encode()).hexdigest(),
        )
        rewrite_entry(entry_of(decision), payload=payload)
    verify_fails(r"ledger entry 1 .*signature does not verify")


def test_a_swapped_signature_is_named(ledger):
    first, second = ledger[0], ledger[1]
    with tampering():
        Decision.objects.filter(pk=first.pk).update(signature=second.signature)
    verify_fails(
        rf"ledger entry 1 .*decision {first.pk} differs from its ledger entry in signature"
    )


def test_a_signature_swapped_in_the_ledger_too_fails_verification(ledger):
    first, second = ledger[0], ledger[1]
    with tampering():
        Decision.objects.filter(pk=first.pk).update(signature=second.signature)
        rewrite_entry(entry_of(first), signature=second.signature)
    verify_fails(r"ledger entry 1 .*signature does not verify")


def test_an_entry_stored_in_another_encoding_of_the_same_fields_is_named(ledger):
    """Same four fields, same row, same leaf hash: only the stored bytes are not canonical."""
    entry = entry_of(ledger[0])
    text = json.dumps(json.loads(entry.entry), indent=1)
    with tampering():
        LedgerEntry.objects.filter(pk=entry.pk).update(entry=text)
    verify_fails(r"ledger entry 1 .*stored entry is not in canonical form")


def test_a_deleted_entry_is_named(ledger):
    with tampering():
        LedgerEntry.objects.filter(decision_id=ledger[1].pk).delete()
        Decision.objects.filter(pk=ledger[1].pk).delete()
    verify_fails(r"ledger entry 4 .*entry 3 is missing \(found entry 4 next\)")


def test_a_deleted_and_renumbered_entry_no_longer_matches_the_stored_tree(ledger):
    with tampering():
        LedgerEntry.objects.filter(decision_id=ledger[0].pk).delete()
        Decision.objects.filter(pk=ledger[0].pk).delete()
        for entry in LedgerEntry.objects.filter(leaf_index__gt=1).order_by("leaf_index"):
            LedgerEntry.objects.filter(pk=entry.pk).update(leaf_index=entry.leaf_index - 1)
    verify_fails(r"ledger entry 1 \(evidence .*entries 0–1 were changed, reordered or removed")


def test_a_deleted_last_entry_is_caught_by_the_checkpoint(ledger):
    with tampering():
        LedgerEntry.objects.filter(decision_id=ledger[2].pk).delete()
        Decision.objects.filter(pk=ledger[2].pk).delete()
    verify_fails(
        r"checkpoint \d+ \(size 6, key [^)]+\): "
        r"signed for size 6, but the ledger holds only 5 entries"
    )


def test_a_removed_last_entry_is_caught_by_the_stored_tree(ledger):
    with tampering():
        LedgerEntry.objects.filter(decision_id=ledger[2].pk).delete()
        LedgerCheckpoint.objects.all().delete()
    verify_fails(r"ledger entries 4–5: entries were removed from the end")


def test_a_removed_ledger_entry_leaves_its_decision_outside_the_ledger(ledger):
    with tampering():
        LedgerEntry.objects.filter(decision_id=ledger[2].pk).delete()
        LedgerNode.objects.filter(level=1, node_index=2).delete()
        LedgerCheckpoint.objects.all().delete()
    verify_fails(
        rf"decision {ledger[2].pk} \(proposal {ledger[2].proposal_id}\): is not in the ledger"
    )


def _swap(a: LedgerEntry, b: LedgerEntry) -> None:
    LedgerEntry.objects.filter(pk=a.pk).update(leaf_index=10_000)
    LedgerEntry.objects.filter(pk=b.pk).update(leaf_index=a.leaf_index)
    LedgerEntry.objects.filter(pk=a.pk).update(leaf_index=b.leaf_index)


def test_reordered_decisions_are_caught_by_the_tree_and_their_evidence(ledger):
    with tampering():
        _swap(entry_of(ledger[0]), entry_of(ledger[1]))
    # Signed alone, they name no predecessor: the decision moved first no longer follows
    # the evidence it signed (and the stored subtrees no longer match the entries).
    verify_fails(rf"ledger entry 1 \(decision {ledger[1].pk}.*signed evidence from .* is not in")


def test_reordered_decisions_signed_before_v2_break_their_chain(db):
    chained = decide_chained_v1(3)
    decide(1)
    with tampering():
        _swap(entry_of(chained[0]), entry_of(chained[1]))
    verify_fails(rf"ledger entry 0 \(decision {chained[1].pk}.*decision chain broken")


def test_reordered_evidence_is_caught_at_the_decision_it_belongs_to(ledger):
    first, second = (LedgerEntry.objects.get(leaf_index=i) for i in (0, 2))
    with tampering():
        _swap(first, second)
    # Caught at the first decision, whose signed evidence no longer precedes it.
    verify_fails(r"ledger entry 1 \(decision .*signed evidence from .* is not in the ledger before")


def test_reordered_evidence_with_a_recomputed_tree_is_caught(ledger):
    first, second = (LedgerEntry.objects.get(leaf_index=i) for i in (0, 2))
    with tampering():
        _swap(first, second)
        leaves = [
            bytes.fromhex(h)
            for h in LedgerEntry.objects.order_by("leaf_index").values_list("leaf_hash", flat=True)
        ]
        for (level, index), h in merkle.MemoryTree(leaves).nodes.items():
            if level:
                LedgerNode.objects.filter(level=level, node_index=index).update(hash=h.hex())
    verify_fails(r"ledger entry 1 \(decision .*signed evidence from .* is not in the ledger before")


def test_edited_evidence_is_named(ledger):
    evidence = Evidence.objects.order_by("id").first()
    with tampering():
        Evidence.objects.filter(pk=evidence.pk).update(verdict="fail")
    verify_fails(
        rf"ledger entry 0 \(evidence {evidence.pk}.*differs from its signed bytes in verdict"
    )


def test_a_checkpoint_signed_by_another_key_is_rejected(ledger):
    impostor = SigningKey.generate()
    checkpoint = merkle.Checkpoint(services.DEFAULT_ORIGIN, 6, merkle.EMPTY_ROOT)
    note = merkle.sign_checkpoint(
        checkpoint, bytes(impostor.verify_key), lambda b: impostor.sign(b).signature
    )
    LedgerCheckpoint.objects.create(
        origin=checkpoint.origin,
        tree_size=6,
        root_hash=checkpoint.root_hex,
        timestamp=LedgerCheckpoint.objects.get().timestamp,
        note=note,
        key_id="ed25519:impostor",
    )
    verify_fails(
        r"checkpoint \d+ \(size 6, key ed25519:impostor\): "
        r"checkpoint rejected: the note is not signed by any trusted key \(signed by "
    )


def test_an_edited_checkpoint_fails_its_signature(ledger):
    checkpoint = LedgerCheckpoint.objects.get()
    lines = checkpoint.note.split("\n")
    lines[2] = base64.b64encode(merkle.EMPTY_ROOT).decode()
    with tampering():
        LedgerCheckpoint.objects.filter(pk=checkpoint.pk).update(
            note="\n".join(lines), root_hash=merkle.EMPTY_ROOT.hex()
        )
    verify_fails(r"checkpoint rejected: the signature by reviewapp.local/ledger does not verify")


def test_a_checkpoint_row_that_differs_from_its_note_is_named(ledger):
    with tampering():
        LedgerCheckpoint.objects.update(tree_size=5)
    verify_fails(r"checkpoint \d+ \(size 5, key [^)]+\): the row differs from its signed note")


def test_a_correctly_signed_checkpoint_over_a_different_tree_is_caught(ledger):
    """A key holder who signs a head the entries do not give is caught by recomputation."""
    signer = server_signer()
    checkpoint = merkle.Checkpoint(services.DEFAULT_ORIGIN, 4, merkle.EMPTY_ROOT)
    LedgerCheckpoint.objects.create(
        origin=checkpoint.origin,
        tree_size=4,
        root_hash=checkpoint.root_hex,
        timestamp=LedgerCheckpoint.objects.get().timestamp,
        note=merkle.sign_checkpoint(checkpoint, signer.public_key, signer.sign_bytes),
        key_id=signer.key_id,
    )
    verify_fails(r"checkpoint for size 4 has root e3b0c442.*, the entries give")


def test_verification_in_worker_processes_names_the_same_entry(ledger):
    with tampering():
        Decision.objects.filter(pk=ledger[1].pk).update(signature=ledger[2].signature)
        rewrite_entry(entry_of(ledger[1]), signature=ledger[2].signature)
    result = ledger_verify(workers=2)
    assert result.problem.startswith(f"ledger entry 3 (decision {ledger[1].pk}")
    assert "signature does not verify" in result.problem
    assert ledger_verify(workers=1).problem == result.problem


def test_missing_triggers_are_reported(ledger):
    with tampering("review_decision"):
        err = io.StringIO()
        call_command("verify_ledger", stdout=io.StringIO(), stderr=err)
    assert (
        "append-only triggers are missing or disabled on: review_decision:update" in err.getvalue()
    )


def test_decisions_signed_before_and_after_v2_verify_side_by_side(db):
    from reviewapp.review.services.decisions import decision_check

    chained = decide_chained_v1(2)
    decide(2)
    decide_chained_v1(1)  # chains on the last chained decision, across the v2 ones
    services.checkpoint_create()
    result = ledger_verify()
    assert result.ok, result.problem
    assert (result.decisions, result.evidence) == (5, 2)
    out = io.StringIO()
    call_command("verify_decisions", stdout=out)
    assert "5 decisions verified" in out.getvalue()
    assert decision_check(chained[0]).ok
    assert decision_ledger_status(chained[0]).verified
