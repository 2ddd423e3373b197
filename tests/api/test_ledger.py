"""/api/ledger/*: proofs public, entries for readers, JSON errors, and proofs that an
independent RFC 6962 accepts."""

import base64
import json

import pytest
from django.test import Client

from reviewapp.core import merkle
from reviewapp.ledger import services
from reviewapp.ledger.keys import server_signer
from reviewapp.ledger.models import LedgerEntry
from tests.api.conftest import make_token
from tests.factories import ReviewerFactory
from tests.ledger.helpers import decide
from tests.support.rfc6962 import MTH, PATH, PROOF, H

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.ledger.urls")]


def entry_data() -> list[bytes]:
    """Every entry's bytes, rebuilt from what the API serves."""
    return [
        json.dumps(
            {k: e[k] for k in ("key_id", "kind", "payload", "signature")},
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=True,
        ).encode()
        for e in all_entries()
    ]


def all_entries() -> list[dict]:
    return [services.entry_json(e) for e in LedgerEntry.objects.order_by("leaf_index")]


def hexes(hashes) -> list[str]:
    return [h.hex() for h in hashes]


def token_client(*scopes: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_token(*scopes)}"})


@pytest.fixture
def reader(db) -> Client:
    """A token that may read every client's records: raw entries need one."""
    return token_client("read:all")


@pytest.fixture
def ledger():
    decide(4)  # 8 entries
    services.checkpoint_create()
    decide(2)  # 12 entries, the latest checkpoint still at 8
    return entry_data()


def test_the_checkpoint_is_public_and_verifies(client, ledger):
    response = client.get("/api/ledger/checkpoint")
    assert response.status_code == 200
    body = response.json()
    assert body["tree_size"] == 8
    assert body["root_hash"] == MTH(ledger[:8]).hex()
    opened = merkle.open_checkpoint(body["checkpoint"], [server_signer().public_key])
    assert opened.root == MTH(ledger[:8]) and opened.size == 8
    assert body["key_id"] == server_signer().key_id


def test_inclusion_proofs_match_rfc6962_path(client, ledger):
    services.checkpoint_create()  # integrates entries 8-11
    for size in (1, 5, 8, 12):
        for index in range(size):
            response = client.get(f"/api/ledger/proof/{index}?size={size}")
            assert response.status_code == 200, response.json()
            body = response.json()
            assert body["proof"] == hexes(PATH(index, ledger[:size]))
            assert body["root_hash"] == MTH(ledger[:size]).hex()
            assert body["leaf_hash"] == H(b"\x00" + ledger[index]).hex()
            assert body["entry"]["index"] == index


def test_an_inclusion_proof_defaults_to_the_latest_checkpoint(client, ledger):
    body = client.get("/api/ledger/proof/3").json()
    assert body["tree_size"] == 8
    checkpoint = merkle.open_checkpoint(
        client.get("/api/ledger/checkpoint").json()["checkpoint"], [server_signer().public_key]
    )
    assert merkle.verify_inclusion(
        3,
        8,
        bytes.fromhex(body["leaf_hash"]),
        [bytes.fromhex(h) for h in body["proof"]],
        checkpoint.root,
    )


def test_consistency_proofs_match_rfc6962_proof(client, ledger):
    services.checkpoint_create()  # integrates entries 8-11
    for new in (1, 6, 8, 12):
        for old in range(0, new + 1):
            response = client.get(f"/api/ledger/consistency?from={old}&to={new}")
            assert response.status_code == 200, response.json()
            body = response.json()
            assert body["proof"] == hexes(PROOF(old, ledger[:new]))
            assert (body["from"], body["to"]) == (old, new)
            assert body["from_root"] == MTH(ledger[:old]).hex()
            assert body["to_root"] == MTH(ledger[:new]).hex()


def test_consistency_between_two_checkpoints(client, ledger):
    services.checkpoint_create()
    body = client.get("/api/ledger/consistency?from=8").json()
    assert body["to"] == 12
    assert merkle.verify_consistency(
        8, 12, MTH(ledger[:8]), MTH(ledger), [bytes.fromhex(h) for h in body["proof"]]
    )


def test_entries_page_for_mirroring(reader, ledger):
    body = reader.get("/api/ledger/entries?start=2&end=5").json()
    assert (body["start"], body["end"], body["tree_size"]) == (2, 5, 12)
    assert body["entries"] == all_entries()[2:5]
    assert reader.get("/api/ledger/entries").json()["end"] == 12
    assert reader.get("/api/ledger/entries?start=12").json()["entries"] == []


def test_entries_need_an_authenticated_reader_by_default(client, ledger):
    response = client.get("/api/ledger/entries")
    assert response.status_code == 401 and "detail" in response.json()
    assert "entries" not in response.json()


def test_a_read_token_limited_to_its_own_proposals_may_not_read_every_entry(ledger):
    response = token_client("read").get("/api/ledger/entries")
    assert response.status_code == 403
    assert "read:all" in response.json()["detail"]


def test_a_reviewer_session_reads_entries(client, ledger):
    client.force_login(ReviewerFactory())
    assert client.get("/api/ledger/entries").json()["entries"] == all_entries()


def test_a_setting_opens_entries_to_the_public(client, ledger, settings):
    settings.REVIEWAPP_LEDGER_PUBLIC = True
    response = client.get("/api/ledger/entries?start=0&end=2")
    assert response.status_code == 200
    assert response.json()["entries"] == all_entries()[:2]


def test_checkpoints_and_proofs_stay_public(client, ledger):
    assert client.get("/api/ledger/checkpoint").status_code == 200
    assert client.get("/api/ledger/proof/3").status_code == 200
    assert client.get("/api/ledger/consistency?from=2&to=8").status_code == 200


def test_entry_pages_are_bounded(reader, ledger, monkeypatch):
    monkeypatch.setattr(services, "MAX_PAGE", 5)
    body = reader.get("/api/ledger/entries?start=1&end=12").json()
    assert (body["start"], body["end"], len(body["entries"])) == (1, 6, 5)


BEYOND = (
    "tree size {n} is beyond the ledger's integrated tree of 8 entries (the latest checkpoint; "
    "later entries are provable from the next one)"
)


@pytest.mark.parametrize(
    ("url", "status", "detail"),
    [
        ("/api/ledger/proof/8?size=8", 404, "entry 8 is not in the tree of size 8"),
        # Entries 8-11 exist, but the tree holds them from the next checkpoint on.
        ("/api/ledger/proof/0?size=12", 404, BEYOND.format(n=12)),
        ("/api/ledger/proof/0?size=13", 404, BEYOND.format(n=13)),
        ("/api/ledger/proof/99999999999999999999", 422, None),
        ("/api/ledger/proof/-1", 422, None),
        ("/api/ledger/proof/abc", 422, None),
        ("/api/ledger/proof/0?size=-3", 422, None),
        ("/api/ledger/consistency?from=9&to=8", 422, "from (9) must not exceed to (8)"),
        ("/api/ledger/consistency?from=1&to=13", 404, BEYOND.format(n=13)),
        ("/api/ledger/consistency", 422, None),
        ("/api/ledger/consistency?from=1e3", 422, None),
        ("/api/ledger/entries?start=13", 404, "start 13 is beyond the ledger's 12 entries"),
        ("/api/ledger/entries?start=5&end=2", 422, "end (2) must not be below start (5)"),
        ("/api/ledger/entries?start=4611686018427387905", 422, None),
    ],
)
def test_bad_requests_are_json_4xx(reader, ledger, url, status, detail):
    response = reader.get(url)
    assert response.status_code == status
    body = response.json()
    assert "detail" in body
    if detail:
        assert body["detail"] == detail


def test_an_empty_ledger_answers_404_not_500(client, reader):
    assert client.get("/api/ledger/checkpoint").status_code == 404
    assert client.get("/api/ledger/checkpoint").json() == {
        "detail": "no checkpoint has been signed yet"
    }
    assert client.get("/api/ledger/proof/0").status_code == 404
    assert client.get("/api/ledger/consistency?from=0").status_code == 404
    assert client.get("/api/ledger/consistency?from=0&to=0").json()["proof"] == []
    assert reader.get("/api/ledger/entries").json() == {
        "start": 0,
        "end": 0,
        "tree_size": 0,
        "entries": [],
    }


def test_a_missing_subtree_is_a_404_not_a_500(client, ledger):
    from reviewapp.ledger.models import LedgerNode
    from tests.support.tamper import tampering

    with tampering():
        LedgerNode.objects.filter(level=3, node_index=0).delete()
    response = client.get("/api/ledger/proof/1?size=8")
    assert response.status_code == 404
    assert response.json() == {"detail": "ledger subtree (level 3, index 0) is missing"}


def test_the_root_hash_in_the_checkpoint_is_base64_of_the_api_root(client, ledger):
    body = client.get("/api/ledger/checkpoint").json()
    assert (
        body["checkpoint"].split("\n")[2]
        == base64.b64encode(bytes.fromhex(body["root_hash"])).decode()
    )
