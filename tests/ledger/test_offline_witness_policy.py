"""Issue 34: the offline verifier holds checkpoints to a witness policy (`--witness-key`,
`--witness-quorum`), for a ledger export and for decisions proven included in a cosigned
checkpoint with the API's proofs.

The witnesses here cosign with tests/support/c2sp_cosignature.py (written from the
specification, sharing no code with the verifier), and their lines are stored as the
server stores a witness's answer; the protocol itself is tested in test_cosigning.py.
"""

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from reviewapp_client.verify import cli

from reviewapp.ledger import services
from tests.api.conftest import make_token
from tests.ledger.helpers import (
    Witness,
    decide,
    export,
    public_key_b64,
    read_jsonl,
    write_jsonl,
)
from tests.ledger.test_offline_verifier import fails, run

pytestmark = pytest.mark.django_db

W1 = Witness("w1.example/w", bytes([1]) * 32)
W2 = Witness("w2.example/w", bytes([2]) * 32)
BOTH = ("--witness-key", W1.vkey, "--witness-key", W2.vkey)


def verifies(*args) -> str:
    code, out, err = run(*args)
    assert code == 0, err
    return out


def cosigned_export(tmp_path, *witnesses):
    decide(2)
    checkpoint = services.checkpoint_create()
    for witness in witnesses:
        witness.cosign(checkpoint)
    return export(tmp_path)


# ── a ledger export ──────────────────────────────────────────────────────────


def test_an_export_cosigned_by_too_few_witnesses_fails_naming_the_one_missing(tmp_path):
    exported = cosigned_export(tmp_path, W1)
    fails(
        exported,
        *BOTH,
        match=r"^FAIL line \d+ \(checkpoint\): checkpoint for size 4: cosigned by 1 of the 2 "
        r"\(of 2\) witnesses required; missing: w2\.example/w$",
    )


def test_an_export_cosigned_by_enough_witnesses_passes(tmp_path):
    exported = cosigned_export(tmp_path, W1)
    out = verifies(exported, "--public-key", public_key_b64(), *BOTH, "--witness-quorum", "1")
    assert out.startswith("OK: 4 ledger entries")
    assert "checkpoint for size 4 cosigned by w1.example/w (witness quorum 1 of 2)" in out


def test_all_witnesses_are_required_unless_a_quorum_is_given(tmp_path):
    exported = cosigned_export(tmp_path, W1, W2)
    out = verifies(exported, "--public-key", public_key_b64(), *BOTH)
    assert "cosigned by w1.example/w, w2.example/w (witness quorum 2 of 2)" in out


def test_only_the_newest_checkpoint_of_an_export_needs_the_cosignatures(tmp_path):
    decide(1)
    services.checkpoint_create()  # before the witnesses were configured: never cosigned
    exported = cosigned_export(tmp_path, W1)
    out = verifies(exported, "--public-key", public_key_b64(), "--witness-key", W1.vkey)
    assert "checkpoint for size 6 cosigned by w1.example/w" in out


def test_entries_after_the_cosigned_checkpoint_are_named_unwitnessed(tmp_path):
    cosigned_export(tmp_path, W1)
    decide(1)
    exported = export(tmp_path, checkpoint=False)
    code, out, err = run(exported, "--public-key", public_key_b64(), "--witness-key", W1.vkey)
    assert code == 0, err
    assert "checkpoint for size 4 cosigned by w1.example/w" in out
    assert "warning: entries 4–5 come after the cosigned checkpoint" in err


def export_command(tmp_path) -> tuple[object, str]:
    """`manage.py export_decisions -o FILE`, as the README runs it: the file, its stderr."""
    path, err = tmp_path / "ledger.jsonl", io.StringIO()
    call_command("export_decisions", "-o", str(path), stderr=err)
    return path, err.getvalue()


def test_a_fresh_export_verifies_with_a_witness_quorum_as_the_readme_shows(tmp_path, settings):
    """Issue 42: export_decisions signed a checkpoint no witness had cosigned yet, so the
    README's `--witness-quorum 1` failed until an export 15-35 s later. It exports against
    the latest cosigned checkpoint, and says what came after it."""
    settings.REVIEWAPP_LEDGER_WITNESSES = [
        (W1.vkey, "http://127.0.0.1:9"),
        (W2.vkey, "http://127.0.0.1:9"),
    ]
    cosigned_export(tmp_path, W1)  # size 4, cosigned by w1
    decide(1)  # entries 4 and 5: the export signs a checkpoint for them, not cosigned yet

    exported, said = export_command(tmp_path)

    code, out, err = run(exported, "--public-key", public_key_b64(), *BOTH, "--witness-quorum", "1")
    assert code == 0, err
    assert "checkpoint for size 4 cosigned by w1.example/w (witness quorum 1 of 2)" in out
    assert "entries 4–5 come after the cosigned checkpoint" in err
    assert "against the checkpoint for size 4" in said and "2 entries after it" in said


def test_an_export_before_any_cosignature_says_how_long_to_wait(tmp_path, settings):
    settings.REVIEWAPP_LEDGER_WITNESSES = [(W1.vkey, "http://127.0.0.1:9")]
    decide(1)

    _, said = export_command(tmp_path)

    assert "no checkpoint is cosigned by a witness yet" in said
    assert "export again in" in said and "REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS" in said


def test_a_cosignature_that_does_not_verify_does_not_count(tmp_path):
    decide(2)
    checkpoint = services.checkpoint_create()
    W1.cosign(checkpoint)
    W2.cosign(checkpoint, corrupt=True)
    fails(
        export(tmp_path),
        *BOTH,
        match=r"missing: w2\.example/w \(an invalid cosignature from w2\.example/w\)$",
    )


def test_an_export_without_a_checkpoint_cannot_meet_a_witness_policy(tmp_path):
    decide(1)
    exported = export(tmp_path, checkpoint=False)
    fails(
        exported,
        "--no-checkpoint",
        "--witness-key",
        W1.vkey,
        match=r"^FAIL export: carries no checkpoint to hold to the witness policy",
    )


def test_witness_keys_are_read_from_a_file_like_the_server_configuration(tmp_path):
    exported = cosigned_export(tmp_path, W1, W2)
    keys = tmp_path / "witnesses.txt"
    keys.write_text(f"# REVIEWAPP_LEDGER_WITNESSES\n{W1.vkey} https://w1.example/w\n{W2.vkey}\n")
    out = verifies(exported, "--public-key", public_key_b64(), "--witness-key", keys)
    assert "(witness quorum 2 of 2)" in out


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("--witness-key", W1.vkey, "--witness-quorum", "2"), "between 1 and the 1 witness keys"),
        (("--witness-quorum", "1"), "--witness-quorum needs the witnesses' keys"),
        (("--witness-key", W1.vkey.replace("+", "+0", 1)), "is not 8 hex digits"),
        (("--witness-key", "nonsense"), "neither a witness verifier key nor a file"),
        (("--witness-key", W1.vkey, "--witness-key", W1.vkey), "two witness keys share a name"),
    ],
)
def test_witness_flags_that_cannot_be_used_are_refused(tmp_path, capsys, args, problem):
    exported = cosigned_export(tmp_path, W1)
    with pytest.raises(SystemExit) as exit_:
        cli.main([str(a) for a in (exported, "--public-key", public_key_b64(), *args)])
    assert exit_.value.code == 2
    assert problem in capsys.readouterr().err


# ── decisions proven included in a cosigned checkpoint ──────────────────────


def offline_inputs(tmp_path, *witnesses):
    """What an auditor saves from the API: decisions, the checkpoint, each decision's proof."""
    decide(3)
    checkpoint = services.checkpoint_create()
    for witness in witnesses:
        witness.cosign(checkpoint)
    anyone = Client()
    token = make_token("read", "read:all")
    pages = Client().get("/api/decisions", headers={"Authorization": f"Bearer {token}"}).json()
    decisions = write_jsonl(tmp_path / "decisions.jsonl", pages["items"])
    cosigned = anyone.get("/api/ledger/checkpoint").json()
    (tmp_path / "checkpoint.json").write_text(json.dumps(cosigned))
    proofs = [
        anyone.get(f"/api/ledger/proof/{d['ledger_index']}", {"size": cosigned["tree_size"]}).json()
        for d in pages["items"]
    ]
    write_jsonl(tmp_path / "proofs.jsonl", proofs)
    return (
        decisions,
        "--public-key",
        public_key_b64(),
        "--checkpoint",
        tmp_path / "checkpoint.json",
        "--proofs",
        tmp_path / "proofs.jsonl",
    )


def test_decisions_inclusion_is_verified_offline_against_a_cosigned_checkpoint(tmp_path):
    inputs = offline_inputs(tmp_path, W1, W2)
    out = verifies(*inputs, *BOTH)
    assert out.startswith(
        "OK: 3 decisions: signatures, hashes, each decision once and the v1 decisions' chain "
        "verified"
    )
    assert "every decision's inclusion in the checkpoint verified" in out
    assert "checkpoint for size 6 cosigned by w1.example/w, w2.example/w" in out


def test_a_tampered_inclusion_proof_is_refused_against_the_cosigned_checkpoint(tmp_path):
    inputs = offline_inputs(tmp_path, W1, W2)
    proofs = read_jsonl(tmp_path / "proofs.jsonl")
    proofs[1]["proof"][0] = "00" * 32
    write_jsonl(tmp_path / "proofs.jsonl", proofs)
    code, out, err = run(*inputs, *BOTH)
    assert code == 1, out
    assert err.startswith("FAIL line 2 (decision ")
    assert "does not verify against the checkpoint" in err


def test_decisions_against_a_checkpoint_lacking_a_witness_fail_naming_it(tmp_path):
    inputs = offline_inputs(tmp_path, W1)
    code, out, err = run(*inputs, *BOTH)
    assert code == 1, out
    assert err.startswith("FAIL checkpoint ")
    assert "checkpoint for size 6: cosigned by 1 of the 2 (of 2) witnesses required" in err
    assert err.rstrip().endswith("missing: w2.example/w")


def test_decisions_need_a_checkpoint_to_meet_a_witness_policy(tmp_path):
    decisions, *_ = offline_inputs(tmp_path, W1)
    code, _, err = run(decisions, "--public-key", public_key_b64(), "--witness-key", W1.vkey)
    assert code == 1
    assert "a witness policy needs the cosigned checkpoint they are included in" in err
