"""Rotating the signing key: a new key signs, the old one is retired, old decisions verify."""

import base64
import stat

import pytest
from django.core.management import CommandError, call_command

from reviewapp.audit.models import AuditEntry
from reviewapp.core.signing import Signer
from reviewapp.ledger.keys import forget_cached_signer, server_signer
from reviewapp.ledger.models import SigningKey
from reviewapp.review.models import Decision, Lens
from reviewapp.review.services.decisions import decision_signature_valid
from tests.factories import LensFactory, PanelFactory
from tests.review.helpers import evaluate_in_process, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def key_file(settings, tmp_path):
    path = tmp_path / "keys" / "signing.key"
    settings.REVIEWAPP_SIGNING_KEY = ""
    settings.REVIEWAPP_SIGNING_KEY_FILE = path
    settings.REVIEWAPP_SIGNING_KEY_AUTOCREATE = True
    forget_cached_signer()
    yield path
    forget_cached_signer()


def decide(content: str) -> Decision:
    lens = LensFactory(backend=Lens.Backend.CONSTRAINTS, mandate='must contain "ok"')
    proposal = evaluate_in_process(submit(PanelFactory(lenses=[lens], need=1), content))
    return proposal.decision


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_rotating_in_the_admin_retires_the_old_key_and_old_decisions_still_verify(
    admin_client_ada, key_file
):
    old = decide("ok, first")
    old_key_id = old.key_id
    old_seed = key_file.read_bytes()

    page = admin_client_ada.get("/admin/ledger/signingkey/rotate/")
    assert page.status_code == 200
    response = admin_client_ada.post("/admin/ledger/signingkey/rotate/", follow=True)
    assert "Rotated" in response.content.decode()

    new_key_id = server_signer().key_id
    assert new_key_id != old_key_id
    retired = SigningKey.objects.get(key_id=old_key_id)
    assert retired.retired_at is not None and retired.public_key
    assert SigningKey.objects.get(key_id=new_key_id).retired_at is None

    # The seed files: the new one 0600 in place, the old one moved aside, untouched.
    assert _mode(key_file) == 0o600 and key_file.read_bytes() != old_seed
    aside = key_file.with_name(f"{key_file.name}.retired-{old_key_id}")
    assert aside.read_bytes() == old_seed

    old.refresh_from_db()
    assert decision_signature_valid(old)
    new = decide("ok, second")
    assert new.key_id == new_key_id and decision_signature_valid(new)

    entry = AuditEntry.objects.get(action="rotate")
    assert entry.changes["signing_key"] == {"old": old_key_id, "new": new_key_id}
    assert entry.actor.username == "ada"


def test_no_private_key_reaches_the_database_or_the_pages(admin_client_ada, key_file):
    decide("ok")
    admin_client_ada.post("/admin/ledger/signingkey/rotate/")
    seeds = [key_file.read_bytes().strip().decode()]
    seeds += [p.read_bytes().strip().decode() for p in key_file.parent.glob("*.retired-*")]
    page = admin_client_ada.get("/admin/ledger/signingkey/").content.decode()
    for row in SigningKey.objects.all():
        assert row.public_key in page
    for seed in seeds:
        assert seed not in page
        assert not SigningKey.objects.filter(public_key=seed).exists()
        assert seed not in str(list(AuditEntry.objects.values_list("changes", "note")))


def test_the_rotate_action_on_the_changelist(admin_client_ada, key_file):
    first = server_signer().key_id
    row = SigningKey.objects.get(key_id=first)
    response = admin_client_ada.post(
        "/admin/ledger/signingkey/", {"action": "rotate", "_selected_action": [row.pk]}
    )
    assert response.status_code == 302
    assert server_signer().key_id != first
    assert SigningKey.objects.get(key_id=first).retired_at is not None


def test_after_rotating_the_admin_says_the_next_decision_is_signed_with_the_new_key(
    admin_client_ada, key_file, settings
):
    settings.REVIEWAPP_TRUST_OWN_KEY = False
    decide("ok, first")

    response = admin_client_ada.post("/admin/ledger/signingkey/rotate/", follow=True)

    new = SigningKey.objects.get(retired_at__isnull=True)
    page = " ".join(response.content.decode().split())
    assert f"the next decision is signed with {new.key_id}" in page
    assert "nothing needs a restart" in page and "Restart" not in page
    assert f"{new.public_key} {new.key_id}" in page  # what to add to the trust anchors
    assert decide("ok, second").key_id == new.key_id


def test_the_management_command_rotates(key_file, capsys):
    first = server_signer().key_id
    call_command("rotate_signing_key")
    out = capsys.readouterr().out
    second = server_signer().key_id
    assert second != first and second in out and first in out
    assert SigningKey.objects.get(key_id=first).retired_at is not None
    assert AuditEntry.objects.get(action="rotate").actor_name.startswith(
        "manage.py rotate_signing_key"
    )


def test_rotation_is_refused_when_the_key_comes_from_the_environment(
    admin_client_ada, settings, key_file
):
    settings.REVIEWAPP_SIGNING_KEY = base64.b64encode(b"\x01" * 32).decode()
    forget_cached_signer()
    with pytest.raises(CommandError, match="REVIEWAPP_SIGNING_KEY environment variable"):
        call_command("rotate_signing_key")
    response = admin_client_ada.post("/admin/ledger/signingkey/rotate/", follow=True)
    assert "REVIEWAPP_SIGNING_KEY environment variable" in response.content.decode()
    assert not key_file.exists()
    assert not AuditEntry.objects.filter(action="rotate").exists()


def test_a_key_file_never_used_before_is_registered_then_retired(key_file):
    key_file.parent.mkdir(parents=True)
    before = Signer.generate()
    before.to_file(key_file)
    call_command("rotate_signing_key")
    row = SigningKey.objects.get(key_id=before.key_id)
    assert row.public_key == before.public_key_b64 and row.retired_at is not None


def test_signing_keys_cannot_be_added_edited_or_deleted_in_the_admin(admin_client_ada, key_file):
    server_signer()
    row = SigningKey.objects.get()
    assert admin_client_ada.get("/admin/ledger/signingkey/add/").status_code == 403
    assert admin_client_ada.post(f"/admin/ledger/signingkey/{row.pk}/delete/").status_code == 403
    admin_client_ada.post(f"/admin/ledger/signingkey/{row.pk}/change/", {"key_id": "x"})
    assert SigningKey.objects.get().key_id == row.key_id
