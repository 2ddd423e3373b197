"""reviewapp.core.cosignature against the C2SP specifications' own examples and an
independent transcription of tlog-cosignature (tests/support/c2sp_cosignature.py)."""

import base64

import pytest
from nacl.signing import SigningKey

from reviewapp.core import cosignature, merkle
from tests.core.test_merkle import GO_VERIFIER_KEY
from tests.support import c2sp_cosignature as spec

# C2SP tlog-witness, "Example request body".
SPEC_REQUEST = """old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
"""  # noqa: E501 - the specification's lines, verbatim

SPEC_CHECKPOINT_TEXT = (
    "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
)
# C2SP tlog-cosignature, "Ed25519 signed message".
SPEC_SIGNED_MESSAGE = """cosignature/v1
time 1679315147
example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=
"""
# C2SP tlog-cosignature, the example checkpoint's cosignature line.
SPEC_COSIGNATURE = (
    "\u2014 witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dl"
    "rDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA=="
)


SHORT_KEY = base64.b64encode(b"\x04" + b"k" * 31).decode()


def witness(name="witness.example/w1"):
    key = SigningKey.generate()
    public = bytes(key.verify_key)
    vkey = cosignature.VerifierKey(name, cosignature.COSIGNATURE_KEY_TYPE, public)
    return name, key, public, vkey


def cosign_with(name, key, public, text, timestamp=1700000000):
    return cosignature.cosignature_line(
        text, name, public, lambda m: key.sign(m).signature, timestamp
    )


def test_the_specification_example_request_body_parses():
    request = cosignature.parse_add_checkpoint(SPEC_REQUEST.encode())
    assert request.old_size == 20852014
    assert [base64.b64encode(h).decode() for h in request.proof] == SPEC_REQUEST.split("\n")[1:5]
    assert request.note.startswith("example.com/behind-the-sofa\n20852163\n")
    assert merkle.parse_note(request.note)[0] == SPEC_CHECKPOINT_TEXT


def test_a_built_body_is_the_specification_example_byte_for_byte():
    request = cosignature.parse_add_checkpoint(SPEC_REQUEST.encode())
    built = cosignature.add_checkpoint_body(request.old_size, request.proof, request.note)
    assert built == SPEC_REQUEST.encode()


def test_the_signed_message_is_the_specification_example():
    message = cosignature.signed_message(SPEC_CHECKPOINT_TEXT, 1679315147)
    assert message == SPEC_SIGNED_MESSAGE.encode()
    assert message == spec.message(SPEC_CHECKPOINT_TEXT, 1679315147)


def test_the_specification_example_cosignature_line_parses_to_its_timestamp():
    parsed = cosignature.parse_cosignature(SPEC_COSIGNATURE)
    assert parsed.name == "witness.example.com/w1"
    assert parsed.timestamp == 1679315147  # the signed message example's time line
    assert len(parsed.signature) == 64


def test_a_cosignature_is_what_the_independent_transcription_produces():
    name, key, public, _ = witness()
    line = cosign_with(name, key, public, SPEC_CHECKPOINT_TEXT, 1679315147)
    assert line == spec.cosign(bytes(key), name, SPEC_CHECKPOINT_TEXT, 1679315147) + "\n"
    assert spec.verify_line(line.rstrip("\n"), name, public, SPEC_CHECKPOINT_TEXT) == 1679315147


def test_a_cosignature_from_the_transcription_verifies():
    name, key, _, vkey = witness()
    line = spec.cosign(bytes(key), name, SPEC_CHECKPOINT_TEXT, 42)
    parsed = cosignature.parse_cosignature(line)
    assert cosignature.verify_cosignature(SPEC_CHECKPOINT_TEXT, parsed, vkey)
    other = SPEC_CHECKPOINT_TEXT.replace("20852163", "20852164")
    assert not cosignature.verify_cosignature(other, parsed, vkey)


def test_a_cosignature_by_another_key_of_the_same_name_does_not_verify():
    name, key, _, _ = witness()
    _, _, _, impostor = witness(name)
    parsed = cosignature.parse_cosignature(spec.cosign(bytes(key), name, SPEC_CHECKPOINT_TEXT, 1))
    assert not cosignature.verify_cosignature(SPEC_CHECKPOINT_TEXT, parsed, impostor)


def test_a_vkey_round_trips_and_matches_the_transcription():
    name, _, public, vkey = witness()
    assert vkey.text() == spec.vkey(name, public)
    assert cosignature.parse_vkey(vkey.text()) == vkey


def test_the_go_reference_log_key_parses_as_a_log_key_only():
    key = cosignature.parse_vkey(GO_VERIFIER_KEY, key_type=cosignature.LOG_KEY_TYPE)
    assert (key.name, key.key_id.hex()) == ("PeterNeumann", "c74f20a3")
    with pytest.raises(cosignature.CosignatureError, match="signature type 0x04"):
        cosignature.parse_vkey(GO_VERIFIER_KEY)


@pytest.mark.parametrize(
    "mangle, problem",
    [
        (lambda v: v.replace("+", " "), "is not <name>"),
        (lambda v: "a b" + v[v.index("+") :], "without spaces"),
        (lambda v: v + "+extra", "not base64"),
        (lambda v: v.split("+")[0] + "+" + "0" * 8 + "+" + v.split("+", 2)[2], "is not this key's"),
        (lambda v: v.split("+")[0] + "+ABCDEF01+" + v.split("+", 2)[2], "8 hex digits"),
        (lambda v: v[:-4] + "!!!!", "not base64"),
        (lambda v: "+".join(v.split("+", 2)[:2]) + "+" + SHORT_KEY, "32-byte"),
    ],
)
def test_a_malformed_vkey_is_refused_saying_why(mangle, problem):
    _, _, _, vkey = witness()
    with pytest.raises(cosignature.CosignatureError, match=problem):
        cosignature.parse_vkey(mangle(vkey.text()))


@pytest.mark.parametrize(
    "body, problem",
    [
        (b"old 01\n\n" + SPEC_CHECKPOINT_TEXT.encode(), "old <size>"),
        (b"old -1\n\n" + SPEC_CHECKPOINT_TEXT.encode(), "old <size>"),
        (b"OLD 1\n\n" + SPEC_CHECKPOINT_TEXT.encode(), "old <size>"),
        (b"old 1\n" + SPEC_CHECKPOINT_TEXT.encode(), "no empty line"),
        (b"old 1\n\n", "no checkpoint"),
        (b"old 1\nAAAA\n\n" + SPEC_CHECKPOINT_TEXT.encode(), "32-byte hash"),
        (b"old 1\nnot base64!\n\n" + SPEC_CHECKPOINT_TEXT.encode(), "not base64"),
        (b"old 1\n" + b"\xff\n\n", "not UTF-8"),
    ],
)
def test_a_malformed_body_is_refused(body, problem):
    with pytest.raises(cosignature.CosignatureError, match=problem):
        cosignature.parse_add_checkpoint(body)


def test_more_than_63_proof_lines_are_refused_both_ways():
    proof = [bytes(32)] * 64
    with pytest.raises(cosignature.CosignatureError, match="at most 63"):
        cosignature.add_checkpoint_body(1, proof, SPEC_CHECKPOINT_TEXT)
    body = "old 1\n" + "".join(base64.b64encode(h).decode() + "\n" for h in proof) + "\n"
    with pytest.raises(cosignature.CosignatureError, match="more than 63"):
        cosignature.parse_add_checkpoint((body + SPEC_CHECKPOINT_TEXT).encode())


def test_a_409_body_is_a_size_line():
    assert cosignature.parse_size_body("20852014\n") == 20852014
    for bad in ("20852014", "012\n", "x\n", "1\n2\n"):
        with pytest.raises(cosignature.CosignatureError):
            cosignature.parse_size_body(bad)


def test_a_policy_names_the_witnesses_missing():
    witnesses = [witness(f"w{i}.example/w") for i in range(3)]
    policy = cosignature.WitnessPolicy(tuple(w[3] for w in witnesses), quorum=2)
    lines = [cosign_with(*witnesses[0][:3], SPEC_CHECKPOINT_TEXT).rstrip("\n")]
    result = cosignature.policy_check(policy, SPEC_CHECKPOINT_TEXT, lines)
    assert not result.ok
    assert result.missing == ("w1.example/w", "w2.example/w")
    assert result.problem() == (
        "cosigned by 1 of the 2 (of 3) witnesses required; missing: w1.example/w, w2.example/w"
    )
    lines.append(cosign_with(*witnesses[2][:3], SPEC_CHECKPOINT_TEXT).rstrip("\n"))
    result = cosignature.policy_check(policy, SPEC_CHECKPOINT_TEXT, lines)
    assert result.ok and result.problem() is None
    assert result.cosigned == ("w0.example/w", "w2.example/w")


def test_a_policy_counts_a_cosignature_of_another_checkpoint_as_missing_and_invalid():
    witnesses = [witness(f"w{i}.example/w") for i in range(2)]
    policy = cosignature.WitnessPolicy(tuple(w[3] for w in witnesses), quorum=1)
    other = SPEC_CHECKPOINT_TEXT.replace("20852163", "20852164")
    lines = [cosign_with(*witnesses[0][:3], other)]
    result = cosignature.policy_check(policy, SPEC_CHECKPOINT_TEXT, lines)
    assert not result.ok
    assert result.invalid == ("w0.example/w",)
    assert "invalid cosignature from w0.example/w" in result.problem()


def test_a_policy_ignores_signatures_by_unknown_keys_and_other_lines():
    witnesses = [witness("w0.example/w"), witness("stranger.example/w")]
    policy = cosignature.WitnessPolicy((witnesses[0][3],), quorum=1)
    note_signer = SigningKey.generate()
    note = merkle.sign_note(
        SPEC_CHECKPOINT_TEXT,
        "example.com/behind-the-sofa",
        bytes(note_signer.verify_key),
        lambda m: note_signer.sign(m).signature,
    )
    note += cosign_with(*witnesses[1][:3], SPEC_CHECKPOINT_TEXT)
    assert not cosignature.note_policy_check(policy, note).ok
    note += cosign_with(*witnesses[0][:3], SPEC_CHECKPOINT_TEXT)
    assert cosignature.note_policy_check(policy, note).cosigned == ("w0.example/w",)


def test_a_policy_quorum_must_be_reachable():
    _, _, _, vkey = witness()
    with pytest.raises(cosignature.CosignatureError, match="quorum of 2 out of 1"):
        cosignature.WitnessPolicy((vkey,), quorum=2)
