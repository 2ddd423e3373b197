"""/ledger/: the ledger as C2SP tlog-tiles, read back by a client written from the spec."""

import gzip

import pytest
from django.test import Client

from reviewapp.ledger.models import LedgerEntry
from reviewapp.ledger.services import (
    checkpoint_create,
    ledger_append,
    ledger_sequence,
    signed_entry,
)
from reviewapp.review.models import CheckerConfig, Evidence
from tests.api.conftest import make_token
from tests.factories import CheckerFactory, ReviewerFactory
from tests.ledger.helpers import decide
from tests.ledger.tile_client import (
    TileReader,
    checkpoint_size_and_root,
    path_from_leaf_hashes,
    root_from_leaf_hashes,
    tile_url,
)
from tests.support.rfc6962 import H

pytestmark = pytest.mark.django_db


def grow_ledger(size: int, *, payload_bytes: int = 40) -> None:
    """A ledger of `size` entries: one decided proposal, then evidence rows appended in bulk."""
    (proposal,) = decide(1, checker=False)
    missing = size - LedgerEntry.objects.count()
    checkers = CheckerConfig.objects.bulk_create(
        CheckerFactory.build(name=f"tile-checker-{i}") for i in range(missing)
    )
    evidence = Evidence.objects.bulk_create(
        Evidence(
            proposal=proposal,
            checker=checker,
            checker_name=checker.name,
            checker_version=1,
            verdict="pass",
            payload=f'{{"n":{i},"pad":"{"x" * payload_bytes}"}}',
            signature="c2lnbmF0dXJl",
            key_id="k",
        )
        for i, checker in enumerate(checkers)
    )
    ledger_append(signed_entry("evidence", e) for e in evidence)
    ledger_sequence()


def fetch_ok(client=None):
    client = client or Client()

    def fetch(url: str) -> bytes:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:200])
        assert response["Content-Type"] == "application/octet-stream"
        return response.content

    return fetch


def test_a_tile_client_rebuilds_the_tree_whose_root_the_checkpoint_signs():
    grow_ledger(600)  # two full level-0 tiles, one of width 88, a level-1 tile of width 2
    checkpoint_create()
    note = Client().get("/ledger/checkpoint").content.decode()
    size, root = checkpoint_size_and_root(note)
    reader = TileReader(fetch_ok())

    leaves = reader.leaf_hashes(size)

    assert size == 600
    assert reader.fetched == [
        "/ledger/tile/0/000",
        "/ledger/tile/0/001",
        "/ledger/tile/0/002.p/88",
        "/ledger/tile/1/000.p/2",
    ]
    assert root_from_leaf_hashes(leaves) == root


def test_inclusion_proofs_from_tiles_match_the_api_s():
    grow_ledger(300)
    checkpoint_create()
    leaves = TileReader(fetch_ok()).leaf_hashes(300)

    for index in (0, 1, 255, 256, 299):
        proof = Client().get(f"/api/ledger/proof/{index}", {"size": 300}).json()["proof"]
        assert [h.hex() for h in path_from_leaf_hashes(index, leaves)] == proof


def test_entry_bundles_hash_to_the_level_0_tile():
    grow_ledger(260)
    checkpoint_create()
    reader = TileReader(fetch_ok(_reader_session()))
    leaves = reader.leaf_hashes(260)

    entries = reader.entries(0, 256) + reader.entries(1, 4)

    assert [H(b"\x00" + e) for e in entries] == leaves
    assert entries[5] == LedgerEntry.objects.get(leaf_index=5).entry.encode()


def test_a_tile_is_served_only_once_every_hash_in_it_exists():
    grow_ledger(10)

    assert Client().get("/ledger/tile/0/000.p/10").status_code == 200
    for url in ("/ledger/tile/0/000", "/ledger/tile/0/000.p/11", "/ledger/tile/1/000.p/1"):
        response = Client().get(url)
        assert response.status_code == 404, url
        assert b"does not hold" in response.content


@pytest.mark.parametrize(
    "path",
    [
        "0/1",  # not 3 digits
        "0/0001",
        "0/x000/001",  # a leading zero group: the same tile as 0/001
        "0/001/x002",  # x only before the last element
        "64/000",  # levels are 0-63
        "00/000",
        "0/000.p/256",  # a full tile has no .p
        "0/000.p/0",
        "0/000.p/07",
        "entries/x001",
        "-1/000",
        "0/" + "x999/" * 8 + "999",  # beyond any tree (and a 64-bit column)
        "0/" + "x999/" * 1500 + "999",  # more digits than int() takes from a string
    ],
)
def test_a_path_that_names_no_tile_is_404_saying_the_rule(path):
    grow_ledger(3)

    response = Client().get(f"/ledger/tile/{path}")

    assert response.status_code == 404
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.strip()


def test_hash_tiles_are_public_and_cacheable_forever():
    grow_ledger(3)

    response = Client().get("/ledger/tile/0/000.p/3")

    assert response["Cache-Control"] == "public, max-age=31536000, immutable"


def test_the_checkpoint_is_the_signed_note_cached_for_seconds_only():
    grow_ledger(3)
    checkpoint = checkpoint_create()

    response = Client().get("/ledger/checkpoint")

    assert response.content.decode() == checkpoint.note
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Cache-Control"] == "public, max-age=5"


def test_no_checkpoint_yet_is_404():
    response = Client().get("/ledger/checkpoint")

    assert response.status_code == 404
    assert b"no checkpoint" in response.content


def _reader_session() -> Client:
    client = Client()
    client.force_login(ReviewerFactory())
    return client


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("anonymous", 401),
        ("read token", 403),
        ("read:all token", 200),
        ("reviewer", 200),
    ],
)
def test_entry_bundles_need_a_reader(who, status):
    grow_ledger(3)
    client = _reader_session() if who == "reviewer" else Client()
    headers = {}
    if who.endswith("token"):
        headers["Authorization"] = f"Bearer {make_token(who.removesuffix(' token'))}"

    response = client.get(tile_url("entries", 0, 3), headers=headers)

    assert response.status_code == status
    if status != 200:
        assert b"read:all" in response.content


def test_entry_bundles_are_public_when_the_ledger_is(settings):
    settings.REVIEWAPP_LEDGER_PUBLIC = True
    grow_ledger(3)

    response = Client().get(tile_url("entries", 0, 3))

    assert response.status_code == 200
    assert response["Cache-Control"] == "max-age=31536000, immutable"


def test_entry_bundles_are_gzipped_for_a_client_that_asks():
    grow_ledger(40, payload_bytes=400)
    client = _reader_session()
    plain = client.get(tile_url("entries", 0, 40)).content

    response = client.get(tile_url("entries", 0, 40), headers={"Accept-Encoding": "gzip"})

    assert response["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.content) == plain


def test_a_bundle_holding_an_entry_too_long_for_tlog_tiles_says_where_to_read_it():
    grow_ledger(3, payload_bytes=70_000)

    response = _reader_session().get(tile_url("entries", 0, 3))

    assert response.status_code == 422
    assert b"/api/ledger/entries?start=0" in response.content
