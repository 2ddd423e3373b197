import base64
import hashlib
import json
import os
import pickle
import stat

import pytest
import rfc8785
from hypothesis import given

from reviewapp.core.signing import (
    KeyFileError,
    SignedPayload,
    Signer,
    canonical_json,
    key_id_for,
    sha256_hex,
    verify,
    verify_b64,
)
from tests.support.json_values import JSON_VALUES

SEED = bytes(range(32))


@pytest.fixture
def signer() -> Signer:
    return Signer.from_seed(SEED)


# ── canonical JSON ───────────────────────────────────────────────────────────

@given(JSON_VALUES)
def test_canonical_json_reads_back_its_own_output_to_the_same_bytes(value):
    encoded = canonical_json(value)
    assert canonical_json(json.loads(encoded)) == encoded


def test_an_integer_valued_double_beyond_two_to_the_53_round_trips():
    encoded = canonical_json({"x": 1e20, "y": float(2**60)})
    assert encoded == b'{"x":100000000000000000000,"y":1152921504606847000}'
    assert canonical_json(json.loads(encoded)) == encoded


@pytest.mark.parametrize("value", [2**53 + 1, 10**400, float("nan"), float("inf")])
def test_numbers_no_double_spells_exactly_are_still_refused(value):
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_json({"x": value})



def test_canonical_json_does_not_depend_on_key_order():
    assert canonical_json({"b": 1, "a": {"y": 2, "x": 3}}) == canonical_json(
        {"a": {"x": 3, "y": 2}, "b": 1}
    )
    assert canonical_json({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


def test_canonical_json_matches_the_rfc_8785_example():
    # RFC 8785 §3.2.2: number serialisation (ES6 shortest round trip), string
    # escaping (only what JSON requires, lower-case \u escapes, "/" unescaped)
    # and literals.
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],'
        '"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    ).encode("utf-8")
    assert canonical_json(value) == expected


def test_canonical_json_sorts_keys_by_utf16_code_units():
    # RFC 8785 §3.2.3: the emoji (surrogates D83D DE00) sorts before U+FB33,
    # which code-point order would get backwards.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    expected = (
        "{"
        + ",".join(
            f"{canonical_json(k).decode()}:{canonical_json(value[k]).decode()}" for k in keys
        )
        + "}"
    )
    assert canonical_json(value) == expected.encode("utf-8")
    assert canonical_json({"\r": 1}) == b'{"\\r":1}'


def test_canonical_json_writes_unicode_as_utf8_not_escapes():
    assert canonical_json("é😀") == '"é😀"'.encode()


def test_canonical_json_refuses_what_json_cannot_represent_exactly():
    for value in (float("nan"), float("inf"), 2**60 + 1, {1: "non-string key"}):
        with pytest.raises(ValueError):
            canonical_json(value)


def test_sha256_hex():
    assert sha256_hex(b"abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


# ── keys ─────────────────────────────────────────────────────────────────────


def test_key_id_is_derived_from_the_public_key_and_stable(signer):
    expected = "ed25519:" + hashlib.sha256(signer.public_key).hexdigest()[:16]
    assert signer.key_id == expected
    assert key_id_for(signer.public_key) == expected
    assert Signer.from_seed(SEED).key_id == expected
    assert Signer.generate().key_id != expected


def test_key_id_refuses_something_that_is_not_a_public_key():
    with pytest.raises(ValueError):
        key_id_for(b"short")


def test_public_key_forms(signer):
    assert len(signer.public_key) == 32
    assert base64.b64decode(signer.public_key_b64) == signer.public_key


def test_a_seed_must_be_32_bytes():
    with pytest.raises(ValueError):
        Signer.from_seed(b"too short")


def test_repr_hides_the_seed(signer):
    text = repr(signer)
    assert signer.key_id in text
    for form in (SEED.hex(), base64.b64encode(SEED).decode(), repr(SEED)):
        assert form not in text
    assert not hasattr(signer, "__dict__"), "no attribute bag the seed could sit in"


def test_a_signer_cannot_be_pickled(signer):
    with pytest.raises(TypeError):
        pickle.dumps(signer)


# ── seed files ───────────────────────────────────────────────────────────────


def test_seed_file_is_created_0600_and_round_trips(signer, tmp_path):
    path = tmp_path / "host.key"
    old_umask = os.umask(0)  # a permissive umask must not widen the file
    try:
        signer.to_file(path)
    finally:
        os.umask(old_umask)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert base64.b64decode(path.read_bytes().strip()) == SEED
    assert Signer.from_file(path).key_id == signer.key_id


def test_an_existing_key_file_is_never_overwritten(signer, tmp_path):
    path = tmp_path / "host.key"
    Signer.generate().to_file(path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        signer.to_file(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644])
def test_a_key_file_others_can_access_is_refused(signer, tmp_path, mode):
    path = tmp_path / "host.key"
    signer.to_file(path)
    path.chmod(mode)
    with pytest.raises(KeyFileError, match="chmod 600"):
        Signer.from_file(path)


def test_a_key_file_without_a_seed_is_refused(tmp_path):
    for content in (b"not base64!!", base64.b64encode(b"sixteen bytes!!!")):
        path = tmp_path / "bad.key"
        path.unlink(missing_ok=True)
        path.write_bytes(content)
        path.chmod(0o600)
        with pytest.raises(KeyFileError):
            Signer.from_file(path)


# ── signing and verifying ────────────────────────────────────────────────────


def test_round_trip(signer):
    signed = signer.sign({"verdict": "pass", "n": 1})
    assert isinstance(signed, SignedPayload)
    assert signed.payload_bytes == b'{"n":1,"verdict":"pass"}'
    assert signed.key_id == signer.key_id
    assert len(signed.signature) == 64
    assert verify(signed.payload_bytes, signed.signature, signer.public_key)
    assert verify_b64(signed.payload_bytes, signed.signature_b64, signer.public_key_b64)


def test_signing_is_deterministic(signer):
    assert signer.sign({"a": 1}) == signer.sign({"a": 1})
    assert signer.sign_bytes(b"x") == Signer.from_seed(SEED).sign_bytes(b"x")


def test_sign_bytes_signs_exactly_the_bytes(signer):
    assert verify(b"raw bytes", signer.sign_bytes(b"raw bytes"), signer.public_key)


def test_a_tampered_payload_is_rejected(signer):
    signed = signer.sign({"verdict": "fail"})
    tampered = signed.payload_bytes.replace(b"fail", b"pass")
    assert not verify(tampered, signed.signature, signer.public_key)


def test_a_tampered_signature_is_rejected(signer):
    signed = signer.sign({"verdict": "pass"})
    flipped = bytes([signed.signature[0] ^ 1]) + signed.signature[1:]
    assert not verify(signed.payload_bytes, flipped, signer.public_key)


def test_the_wrong_key_is_rejected(signer):
    signed = signer.sign({"verdict": "pass"})
    assert not verify(signed.payload_bytes, signed.signature, Signer.generate().public_key)


@pytest.mark.parametrize(
    "payload, signature, public_key",
    [
        (b"m", b"short", None),
        (b"m", b"\x00" * 64, b"short key"),
        (b"m", b"\x00" * 64, bytes(32)),
        ("text, not bytes", b"\x00" * 64, bytes(32)),
        (b"m", 64, bytes(32)),
        (None, None, None),
    ],
)
def test_bad_input_is_false_never_an_exception(payload, signature, public_key):
    assert verify(payload, signature, public_key) is False


def test_verify_b64_is_false_for_malformed_base64(signer):
    signed = signer.sign({})
    assert not verify_b64(signed.payload_bytes, "not base64!", signer.public_key_b64)
    assert not verify_b64(signed.payload_bytes, signed.signature_b64, "é")
    assert not verify_b64(signed.payload_bytes, None, None)
