"""reviewapp.core.merkle against RFC 6962 written out independently, and published vectors."""

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from reviewapp.core import merkle
from tests.support.rfc6962 import MTH, PATH, PROOF


def data(n: int) -> list[bytes]:
    return [f"entry {i}".encode() * (i % 3 + 1) for i in range(n)]


# ── published vectors (certificate-transparency / transparency-dev) ──────────

CT_LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]
CT_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


def test_roots_match_the_published_rfc6962_vectors():
    tree = merkle.MemoryTree()
    assert tree.root().hex() == CT_ROOTS[0]
    for n, leaf in enumerate(CT_LEAVES, 1):
        tree.append(merkle.leaf_hash(leaf))
        assert tree.root().hex() == CT_ROOTS[n]
        assert MTH(CT_LEAVES[:n]).hex() == CT_ROOTS[n]  # the transcription is right too


def test_published_inclusion_and_consistency_proofs():
    tree = merkle.MemoryTree(merkle.leaf_hash(leaf) for leaf in CT_LEAVES)
    assert [p.hex() for p in tree.inclusion_proof(0, 8)] == [
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ]
    assert [p.hex() for p in tree.inclusion_proof(5, 8)] == [
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ]
    assert [p.hex() for p in tree.consistency_proof(2, 8)] == [
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ]


@pytest.mark.parametrize("n", range(0, 70))
def test_root_and_every_proof_match_the_independent_implementation(n):
    D = data(n)
    tree = merkle.MemoryTree(merkle.leaf_hash(d) for d in D)
    root = MTH(D)
    assert tree.root() == root == merkle.root_of([merkle.leaf_hash(d) for d in D])
    for m in range(n):
        proof = tree.inclusion_proof(m)
        assert proof == PATH(m, D)
        assert merkle.verify_inclusion(m, n, merkle.leaf_hash(D[m]), proof, root)
    for m in range(1, n):
        proof = tree.consistency_proof(m)
        assert proof == PROOF(m, D)
        assert merkle.verify_consistency(m, n, MTH(D[:m]), root, proof)
        assert tree.root(m) == MTH(D[:m])


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.data())
def test_proofs_for_sizes_other_than_the_current_one(n, pick):
    D = data(n)
    tree = merkle.MemoryTree(merkle.leaf_hash(d) for d in D)
    size = pick.draw(st.integers(1, n))
    index = pick.draw(st.integers(0, size - 1))
    old = pick.draw(st.integers(1, size))
    assert tree.inclusion_proof(index, size) == PATH(index, D[:size])
    assert tree.consistency_proof(old, size) == (PROOF(old, D[:size]) if old < size else [])
    assert merkle.verify_consistency(
        old, size, tree.root(old), tree.root(size), tree.consistency_proof(old, size)
    )


def test_tampered_proofs_and_wrong_claims_are_rejected():
    D = data(13)
    tree = merkle.MemoryTree(merkle.leaf_hash(d) for d in D)
    root = tree.root()
    leaf = merkle.leaf_hash(D[6])
    proof = tree.inclusion_proof(6)
    assert merkle.verify_inclusion(6, 13, leaf, proof, root)
    assert not merkle.verify_inclusion(5, 13, leaf, proof, root)
    assert not merkle.verify_inclusion(6, 8, leaf, proof, root)
    assert not merkle.verify_inclusion(6, 13, merkle.leaf_hash(D[5]), proof, root)
    assert not merkle.verify_inclusion(6, 13, leaf, proof[:-1], root)
    assert not merkle.verify_inclusion(6, 13, leaf, [*proof, proof[0]], root)
    assert not merkle.verify_inclusion(6, 13, leaf, [b"\x00" * 32, *proof[1:]], root)
    assert not merkle.verify_inclusion(13, 13, leaf, proof, root)
    consistency = tree.consistency_proof(5)
    assert merkle.verify_consistency(5, 13, tree.root(5), root, consistency)
    assert not merkle.verify_consistency(5, 13, tree.root(4), root, consistency)
    assert not merkle.verify_consistency(5, 13, tree.root(5), tree.root(12), consistency)
    assert not merkle.verify_consistency(4, 13, tree.root(5), root, consistency)
    assert not merkle.verify_consistency(5, 13, tree.root(5), root, consistency[:-1])
    assert not merkle.verify_consistency(5, 13, tree.root(5), root, [])
    assert merkle.verify_consistency(0, 13, merkle.EMPTY_ROOT, root, [])
    assert merkle.verify_consistency(13, 13, root, root, [])
    assert not merkle.verify_consistency(13, 13, root, tree.root(12), [])


def test_out_of_range_requests_raise_proof_error():
    tree = merkle.MemoryTree(merkle.leaf_hash(d) for d in data(5))
    with pytest.raises(merkle.ProofError):
        tree.inclusion_proof(5)
    with pytest.raises(merkle.ProofError):
        tree.inclusion_proof(0, 6)
    with pytest.raises(merkle.ProofError):
        tree.consistency_proof(4, 3)
    with pytest.raises(merkle.ProofError):
        merkle.perfect_cover(1, 4)  # not a range any proof asks for


def test_compact_range_reports_every_perfect_subtree_once():
    compact = merkle.CompactRange()
    created = []
    for d in data(16):
        created += compact.append(merkle.leaf_hash(d))
    assert [(level, index) for level, index, _ in created] == [
        (1, 0),
        (1, 1),
        (2, 0),
        (1, 2),
        (1, 3),
        (2, 1),
        (3, 0),
        (1, 4),
        (1, 5),
        (2, 2),
        (1, 6),
        (1, 7),
        (2, 3),
        (3, 1),
        (4, 0),
    ]
    assert created[-1][2] == MTH(data(16))
    resumed = merkle.CompactRange(16, compact.hashes)
    resumed.append(merkle.leaf_hash(b"more"))
    assert resumed.root() == MTH([*data(16), b"more"])


# ── entries ──────────────────────────────────────────────────────────────────


def test_entry_bytes_bind_every_field_including_the_signature():
    base = merkle.entry_bytes("decision", '{"a":1}', "c2lnbmF0dXJl", "ed25519:00")
    assert base == (
        b'{"key_id":"ed25519:00","kind":"decision",'
        b'"payload":"{\\"a\\":1}","signature":"c2lnbmF0dXJl"}'
    )
    variants = [
        merkle.entry_bytes("evidence", '{"a":1}', "c2lnbmF0dXJl", "ed25519:00"),
        merkle.entry_bytes("decision", '{"a":2}', "c2lnbmF0dXJl", "ed25519:00"),
        merkle.entry_bytes("decision", '{"a":1}', "b3RoZXI=", "ed25519:00"),
        merkle.entry_bytes("decision", '{"a":1}', "c2lnbmF0dXJl", "ed25519:01"),
    ]
    assert len({merkle.leaf_hash(v) for v in [base, *variants]}) == 5
    with pytest.raises(ValueError):
        merkle.entry_bytes("opinion", "{}", "", "")


# ── signed notes and checkpoints ─────────────────────────────────────────────

# golang.org/x/mod/sumdb/note's published example: same key, same text, same bytes.
GO_VERIFIER_KEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SIGNER_KEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT
    + "\n\u2014 PeterNeumann "
    + "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
    + "\n"
)


def _go_keys():
    public = base64.b64decode(GO_VERIFIER_KEY.split("+", 2)[2])
    seed = base64.b64decode(GO_SIGNER_KEY.split("+", 4)[4])
    assert public[0] == seed[0] == 1  # the ed25519 algorithm byte
    return public[1:], SigningKey(seed[1:])


def test_signed_notes_are_byte_identical_to_the_go_reference():
    public, signing = _go_keys()
    assert merkle.note_key_hash("PeterNeumann", public).hex() == "c74f20a3"
    note = merkle.sign_note(GO_TEXT, "PeterNeumann", public, lambda b: signing.sign(b).signature)
    assert note == GO_NOTE
    assert merkle.open_note(GO_NOTE, [public]) == (GO_TEXT, "PeterNeumann")


def test_notes_reject_tampering_unknown_keys_and_malformed_input():
    public, _ = _go_keys()
    with pytest.raises(merkle.NoteError, match="does not verify"):
        merkle.open_note(GO_NOTE.replace("cryptography", "cryptographY"), [public])
    with pytest.raises(merkle.NoteError, match="not signed by any trusted key"):
        merkle.open_note(GO_NOTE, [bytes(SigningKey.generate().verify_key)])
    with pytest.raises(merkle.NoteError, match="not signed by any trusted key"):
        merkle.open_note(GO_NOTE, [public], name="SomeoneElse")
    for broken in (GO_TEXT, GO_NOTE.rstrip("\n"), GO_NOTE.replace("\u2014", "-"), GO_NOTE + "\x07"):
        with pytest.raises(merkle.NoteError):
            merkle.open_note(broken, [public])


def test_checkpoints_follow_c2sp_tlog_checkpoint():
    signing = SigningKey.generate()
    public = bytes(signing.verify_key)
    tree = merkle.MemoryTree(merkle.leaf_hash(d) for d in data(3))
    checkpoint = merkle.Checkpoint(
        "example.com/ledger", 3, tree.root(), ("timestamp 2026-01-02T03:04:05Z",)
    )
    note = merkle.sign_checkpoint(checkpoint, public, lambda b: signing.sign(b).signature)
    body, signature_line = note.split("\n\n")
    assert body.split("\n") == [
        "example.com/ledger",
        "3",
        base64.b64encode(tree.root()).decode(),
        "timestamp 2026-01-02T03:04:05Z",
    ]
    name, blob = signature_line.removeprefix("\u2014 ").rstrip("\n").split(" ")
    raw = base64.b64decode(blob)
    expected_id = hashlib.sha256(b"example.com/ledger\n\x01" + public).digest()[:4]
    assert name == "example.com/ledger" and raw[:4] == expected_id and len(raw) == 68
    opened = merkle.open_checkpoint(note, [public])
    assert opened == checkpoint and opened.timestamp == "2026-01-02T03:04:05Z"
    forged = note.replace("\n3\n", "\n4\n")
    with pytest.raises(merkle.NoteError):
        merkle.open_checkpoint(forged, [public])
    for text in (
        "o\n03\n" + base64.b64encode(tree.root()).decode() + "\n",
        "o\n3\nAAAA\n",
        "o\n3\n",
    ):
        with pytest.raises(merkle.NoteError):
            merkle.parse_checkpoint_text(text)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=1500, deadline=None)
@given(JSON_VALUES)
def test_the_fast_encoder_gives_exactly_rfc8785(value):
    from reviewapp.core.signing import canonical_json

    try:
        expected = canonical_json(value)
    except ValueError:
        expected = ValueError
    try:
        got = merkle.jcs(value)
    except ValueError:
        got = ValueError
    assert got == expected


def test_the_fast_encoder_on_the_awkward_cases():
    from reviewapp.core.signing import canonical_json

    for value in (
        {"a": '\x00\x1f\x7f\u2028"\\/é🚀', "b": [True, False, None, 0, -(2**53 - 1)]},
        {"\U0001f680": 1, "\ufb01": 2},  # UTF-16 order differs from code-point order
        {"n": 1.0, "m": 1e21, "o": 2**53},  # floats and big integers: RFC 8785's rules
    ):
        try:
            expected = canonical_json(value)
        except ValueError:
            expected = ValueError
        try:
            got = merkle.jcs(value)
        except ValueError:
            got = ValueError
        assert got == expected
    with pytest.raises(ValueError):
        merkle.jcs({"a": "\ud800"})
