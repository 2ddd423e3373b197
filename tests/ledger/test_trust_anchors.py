"""Issue 15 point 3: verifiers trust keys from outside the database, never a key row.

The attack: insert a key row, flip a decision's outcome, re-sign it and every
checkpoint with that key. Every verifier must fail, naming the key.
"""

import io
import json

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.urls import reverse

from reviewapp.core import merkle
from reviewapp.core.signing import Signer, sha256_hex
from reviewapp.ledger import services
from reviewapp.ledger.keys import server_signer, trusted_keys
from reviewapp.ledger.models import LedgerCheckpoint, LedgerEntry, SigningKey
from reviewapp.review.in_ledger.status import decision_ledger_status
from reviewapp.review.models import Decision
from reviewapp.review.services.decisions import decision_check
from tests.api.conftest import Api, make_token
from tests.ledger.helpers import (
    decide,
    export,
    public_key_b64,
    rebuild_tree,
    run_offline_verifier,
)
from tests.support.tamper import tampering

pytestmark = pytest.mark.django_db


def _sign_checkpoint(signer: Signer) -> None:
    size = services.tree_size()
    root = services.root_at(size)
    checkpoint = merkle.Checkpoint(services.ledger_origin(), size, root, ())
    note = merkle.sign_checkpoint(checkpoint, signer.public_key, signer.sign_bytes)
    LedgerCheckpoint.objects.create(
        origin=services.ledger_origin(),
        tree_size=size,
        root_hash=root.hex(),
        timestamp="2026-12-01T00:00:00Z",
        note=note,
        key_id=signer.key_id,
    )


@pytest.fixture
def forged():
    """Three decisions; the last one's outcome flipped and everything re-signed by a rogue key."""
    decisions = [p.decision for p in decide(3)]
    services.checkpoint_create()
    rogue = Signer.generate()
    SigningKey.objects.create(key_id=rogue.key_id, public_key=rogue.public_key_b64)
    target = decisions[-1]
    payload = json.loads(target.payload)
    payload["outcome"] = "rejected"
    signed = rogue.sign(payload)
    with tampering():
        Decision.objects.filter(pk=target.pk).update(
            outcome="rejected",
            payload=signed.payload_bytes.decode(),
            signature=signed.signature_b64,
            key_id=rogue.key_id,
            hash=sha256_hex(signed.payload_bytes),
        )
        entry = LedgerEntry.objects.get(decision_id=target.pk)
        text = merkle.entry_bytes(
            "decision", signed.payload_bytes.decode(), signed.signature_b64, rogue.key_id
        )
        LedgerEntry.objects.filter(pk=entry.pk).update(
            entry=text.decode(), leaf_hash=merkle.leaf_hash(text).hex()
        )
        rebuild_tree()
        LedgerCheckpoint.objects.all().delete()
        _sign_checkpoint(rogue)
    return Decision.objects.get(pk=target.pk), rogue


def test_verify_ledger_fails_naming_the_rogue_key(forged):
    decision, rogue = forged
    with pytest.raises(CommandError) as excinfo:
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    assert rogue.key_id in str(excinfo.value)
    assert "not signed by any trusted key" in str(excinfo.value)


def test_verify_ledger_names_the_rogue_key_on_the_decision_too(forged):
    """Without the forged checkpoint, the decision itself is refused, naming its key."""
    decision, rogue = forged
    with tampering():
        LedgerCheckpoint.objects.all().delete()
    with pytest.raises(CommandError) as excinfo:
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    assert f"signed by key {rogue.key_id}, which is not a trusted" in str(excinfo.value)
    assert f"decision {decision.pk}" in str(excinfo.value)


def test_verify_decisions_fails_naming_the_rogue_key(forged):
    decision, rogue = forged
    with pytest.raises(CommandError) as excinfo:
        call_command("verify_decisions", stdout=io.StringIO())
    assert f"decision {decision.pk}" in str(excinfo.value)
    assert f"signed by key {rogue.key_id}, which is not a trusted key" in str(excinfo.value)


def test_the_proposal_pages_verify_fails_naming_the_rogue_key(forged, reviewer_client):
    decision, rogue = forged
    assert rogue.key_id in decision_check(decision).problem
    assert rogue.key_id in decision_ledger_status(decision).detail
    body = reviewer_client.get(reverse("decision_verify", args=[decision.pk])).content.decode()
    assert 'data-verified="invalid"' in body
    assert rogue.key_id in body and "not a trusted key" in body


def test_the_api_never_serves_the_rogue_key(forged):
    decision, rogue = forged
    api = Api(make_token("read:all"))
    keys = api.get("/api/keys").json()
    assert [k["public_key"] for k in keys] == [public_key_b64()]
    assert api.get(f"/api/decisions/{decision.pk}").json()["public_key"] is None


def test_ledger_keys_lists_anchors_only_and_names_the_rogue_row(forged):
    _, rogue = forged
    out, err = io.StringIO(), io.StringIO()
    call_command("ledger_keys", stdout=out, stderr=err)
    assert out.getvalue().split()[0] == public_key_b64()
    assert rogue.public_key_b64 not in out.getvalue()
    assert rogue.key_id in err.getvalue()


def test_the_offline_verifier_fails_naming_the_rogue_key(forged, tmp_path):
    _, rogue = forged
    path = export(tmp_path, checkpoint=False)
    header = json.loads(path.read_text().splitlines()[0])
    assert rogue.public_key_b64 not in json.dumps(header["keys"])
    result = run_offline_verifier(path, "--public-key", public_key_b64(), timeout=60)
    assert result.returncode == 1
    assert result.stderr.startswith("FAIL ") and "Traceback" not in result.stderr
    assert f"signed by key {rogue.key_id}, which is not a trusted public key" in result.stderr


def test_without_anchors_in_production_nothing_verifies_naming_the_servers_key(settings):
    decide(1)
    settings.REVIEWAPP_TRUST_OWN_KEY = False
    settings.REVIEWAPP_TRUSTED_KEYS = []
    with pytest.raises(CommandError, match=f"signed by key {server_signer().key_id}"):
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())


def test_an_anchors_file_makes_the_servers_key_trusted(settings, tmp_path):
    decide(1)
    services.checkpoint_create()
    anchors = tmp_path / "anchors.txt"
    anchors.write_text(f"# trusted\n{public_key_b64()} {server_signer().key_id}\n")
    settings.REVIEWAPP_TRUST_OWN_KEY = False
    settings.REVIEWAPP_TRUSTED_KEYS = [str(anchors)]
    out = io.StringIO()
    call_command("verify_ledger", stdout=out, stderr=io.StringIO())
    assert "2 ledger entries verified" in out.getvalue()


def test_a_rotated_key_verifies_once_its_public_half_is_anchored(settings, tmp_path):
    """Rotation in production: the new key's public half is added to the anchors."""
    from reviewapp.review.services.keys import signing_key_rotate

    settings.REVIEWAPP_SIGNING_KEY_FILE = tmp_path / "signing.key"
    decide(1)
    old = server_signer().public_key_b64
    rotation = signing_key_rotate(actor="test")
    decide(1)
    services.checkpoint_create()
    settings.REVIEWAPP_TRUST_OWN_KEY = False
    settings.REVIEWAPP_TRUSTED_KEYS = [old]
    with pytest.raises(CommandError, match=f"key {rotation.new.key_id}.*not a trusted key"):
        call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())
    settings.REVIEWAPP_TRUSTED_KEYS = [old, rotation.new.public_key]
    call_command("verify_ledger", stdout=io.StringIO(), stderr=io.StringIO())


def test_in_debug_the_own_key_and_the_retired_ones_beside_it_are_trusted(settings, tmp_path):
    from reviewapp.review.services.keys import signing_key_rotate

    settings.REVIEWAPP_SIGNING_KEY_FILE = tmp_path / "signing.key"
    first = server_signer().key_id
    second = signing_key_rotate(actor="test").new.key_id
    assert set(trusted_keys()) == {first, second}


def test_a_bad_anchor_is_refused_naming_the_setting(settings):
    settings.REVIEWAPP_TRUSTED_KEYS = ["not-a-key"]
    with pytest.raises(
        ImproperlyConfigured, match="REVIEWAPP_TRUSTED_KEYS: 'not-a-key' is neither"
    ):
        trusted_keys()


def test_rotation_says_which_public_key_to_add_to_the_anchors(settings, tmp_path):
    settings.REVIEWAPP_SIGNING_KEY_FILE = tmp_path / "signing.key"
    server_signer()
    out = io.StringIO()
    call_command("rotate_signing_key", stdout=out)
    new = SigningKey.objects.get(retired_at__isnull=True)
    assert "REVIEWAPP_TRUSTED_KEYS" in out.getvalue()
    assert f"{new.public_key} {new.key_id}" in out.getvalue()


def test_a_bad_anchor_stops_the_process_at_start_up():
    from tests.test_settings import START, _load_settings

    result = _load_settings(START, REVIEWAPP_TRUSTED_KEYS="/no/such/anchors.txt")
    assert result.returncode != 0
    assert (
        "REVIEWAPP_TRUSTED_KEYS: '/no/such/anchors.txt' is neither a base64 public key nor a file"
        in result.stderr
    )


def test_the_deploy_check_warns_when_the_signing_key_is_not_anchored(settings):
    from reviewapp.ledger.checks import signing_key_is_anchored

    signer = server_signer()
    settings.REVIEWAPP_TRUST_OWN_KEY = False
    settings.REVIEWAPP_TRUSTED_KEYS = []
    (warning,) = signing_key_is_anchored(None)
    assert warning.id == "reviewapp.W100" and signer.key_id in warning.msg
    assert signer.public_key_b64 in warning.hint
    settings.REVIEWAPP_TRUSTED_KEYS = [signer.public_key_b64]
    assert signing_key_is_anchored(None) == []
