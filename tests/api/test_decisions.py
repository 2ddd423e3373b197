import base64
import hashlib
import json

import pytest
from django.test import Client

from reviewapp.core.signing import canonical_json, verify
from reviewapp.ledger.models import LedgerEntry
from reviewapp.ledger.services import checkpoint_create, ledger_sequence
from reviewapp.review.models import Decision
from tests.ledger.helpers import decide_chained_v1

from .conftest import evaluated


def test_decision_has_the_documented_fields(api, decided):
    decision = Decision.objects.get()

    body = api.get(f"/api/decisions/{decision.pk}").json()

    assert body["id"] == decision.pk
    assert body["proposal"] == decided.pk
    assert (body["outcome"], body["basis"], body["decided_by"]) == ("approved", "system", "system")
    assert body["rationale"] == decision.rationale
    assert body["key_id"] == decision.key_id
    assert body["prev_hash"] is None  # signed alone (v2): no chain


def test_a_decision_is_served_signed_at_once_with_a_null_ledger_index_until_sequenced(api, decided):
    body = api.get(f"/api/decisions/{Decision.objects.get().pk}").json()

    assert body["ledger_index"] is None
    assert body["signature"] and body["hash"]


def test_decision_names_its_ledger_entry_to_ask_its_inclusion_proof_by(api, decided):
    decision = Decision.objects.get()
    ledger_sequence()
    entry = LedgerEntry.objects.get(decision_id=decision.pk)

    listed = api.get("/api/decisions").json()["items"][0]
    alone = api.get(f"/api/decisions/{decision.pk}").json()

    assert listed["ledger_index"] == alone["ledger_index"] == entry.leaf_index
    checkpoint_create()  # proofs cover what a checkpoint has integrated
    proof = api.get(f"/api/ledger/proof/{alone['ledger_index']}", {"size": entry.leaf_index + 1})
    assert proof.json()["leaf_hash"] == entry.leaf_hash


def test_decision_verifies_with_nothing_but_its_public_key(api, decided):
    body = api.get(f"/api/decisions/{Decision.objects.get().pk}").json()

    payload = body["payload"].encode()
    assert verify(
        payload, base64.b64decode(body["signature"]), base64.b64decode(body["public_key"])
    )
    assert hashlib.sha256(payload).hexdigest() == body["hash"]


def test_decision_payload_is_the_exact_canonical_json_that_was_signed(api, decided):
    body = api.get(f"/api/decisions/{Decision.objects.get().pk}").json()

    signed = json.loads(body["payload"])
    assert canonical_json(signed) == body["payload"].encode()
    assert signed["proposal"]["id"] == decided.pk


def test_missing_decision_is_404(api, db):
    assert api.get("/api/decisions/999999").status_code == 404


def test_export_lists_decisions_in_ascending_id_after_the_given_one(api, db):
    first = evaluated("One.")
    second = evaluated("Two.")
    third = evaluated("Three.")

    body = api.get("/api/decisions", {"after": first.decision.pk}).json()

    assert [d["proposal"] for d in body["items"]] == [second.pk, third.pk]
    assert body["next_after"] is None


def test_export_pages_and_says_where_to_continue(api, db):
    for text in ("One.", "Two.", "Three."):
        evaluated(text)
    ids = list(Decision.objects.order_by("pk").values_list("pk", flat=True))

    first = api.get("/api/decisions", {"limit": 2}).json()
    rest = api.get("/api/decisions", {"after": first["next_after"], "limit": 2}).json()

    assert [d["id"] for d in first["items"]] == ids[:2]
    assert first["next_after"] == ids[1]
    assert [d["id"] for d in rest["items"]] == ids[2:]
    assert rest["next_after"] is None


def test_decisions_signed_before_v2_keep_their_chain_beside_those_signed_alone(api, db):
    first, second = decide_chained_v1(2)
    evaluated("Three.")

    old, older, new = (
        api.get(f"/api/decisions/{pk}").json()
        for pk in Decision.objects.order_by("pk").values_list("pk", flat=True)
    )

    assert old["prev_hash"] == "0" * 64 and older["prev_hash"] == old["hash"] == first.hash
    assert new["prev_hash"] is None


def test_keys_list_public_keys_only(api, decided):
    keys = api.get("/api/keys").json()

    (key,) = keys
    assert set(key) == {"key_id", "public_key", "created_at", "retired_at"}
    assert len(base64.b64decode(key["public_key"])) == 32
    assert key["key_id"] == Decision.objects.get().key_id


def test_the_keys_are_public_as_a_transparency_logs_are(decided, tmp_path):
    """The offline verifier's docs list GET /api/keys among the public endpoints, and an
    auditor saves its answer as the key file: it needs no token."""
    from reviewapp_client.verify import load_public_keys

    response = Client().get("/api/keys")

    assert response.status_code == 200
    saved = tmp_path / "keys.json"
    saved.write_bytes(response.content)
    (key,) = load_public_keys(str(saved))
    assert base64.b64encode(key).decode() == response.json()[0]["public_key"]


@pytest.mark.parametrize("count", [1, 6])
def test_export_takes_the_same_queries_however_many_decisions(
    api, db, count, django_assert_num_queries
):
    for i in range(count):
        evaluated(f"Answer {i}.")
    api.get("/api/decisions")  # the first use of a token records last_used_at

    # The token lookup and the page (public keys come from the trust anchors, not the database).
    with django_assert_num_queries(2):
        response = api.get("/api/decisions")

    assert len(response.json()["items"]) == count
