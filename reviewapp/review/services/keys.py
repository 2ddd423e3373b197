"""Rotating the server's signing key.

A new seed replaces the old one in REVIEWAPP_SIGNING_KEY_FILE; the old seed
file is moved aside (never deleted) and the old public key stays registered,
retired; every decision it signed still verifies as long as that key stays
among the trust anchors (REVIEWAPP_TRUSTED_KEYS, or in DEBUG the retired seed
file beside the key file), and the new key verifies once it is added there. Private keys never enter
the database: only `SigningKey` rows with public halves are written.
"""

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp.core.signing import KeyFileError, Signer
from reviewapp.ledger.keys import forget_cached_signer
from reviewapp.ledger.models import SigningKey

from .. import events

SIGNING_KEY_AUDIT_FIELDS = ("key_id", "public_key", "created_at", "retired_at")


class RotationRefused(Exception):
    """The key cannot be rotated here; the message says why and what to do instead."""


@dataclass(frozen=True)
class Rotation:
    new: SigningKey
    retired: SigningKey | None
    key_file: Path
    retired_file: Path | None


def rotation_report(rotation: Rotation) -> list[str]:
    """What is true after `rotation`, in sentences for whoever rotated.

    Every process caches the key by the file's identity (reviewapp.ledger.keys),
    so each one reading the key file signs its next decision with the new key:
    nothing needs a restart. Whether verifiers trust the new key depends on
    the trust anchors.
    """
    new = rotation.new
    lines = [
        f"Rotated: the next decision is signed with {new.key_id}. Every web and worker "
        f"process reading {rotation.key_file} picks it up at its next signature; "
        "nothing needs a restart."
    ]
    if rotation.retired is not None:
        lines.append(
            f"{rotation.retired.key_id} is retired for signing; its seed was moved to "
            f"{rotation.retired_file} and its public key stays registered, so everything it "
            "signed still verifies."
        )
    if settings.REVIEWAPP_TRUST_OWN_KEY:
        lines.append(
            "This server trusts its own key files, so the new key verifies here already; a "
            "verifier elsewhere needs its public key among its trust anchors "
            f"(REVIEWAPP_TRUSTED_KEYS): {new.public_key} {new.key_id}"
        )
    else:
        lines.append(
            "Verifiers report its signatures as untrusted until its public key is a trust "
            "anchor: add this line to the file REVIEWAPP_TRUSTED_KEYS names (read at every "
            f"verification), or the key to the variable itself: {new.public_key} {new.key_id}"
        )
    return lines


def retired_path(key_file: Path, key_id: str) -> Path:
    return key_file.with_name(f"{key_file.name}.retired-{key_id}")


def signing_key_rotate(*, actor=None) -> Rotation:
    """Create a new signing key and retire the current one for signing.

    Refused when the key comes from the REVIEWAPP_SIGNING_KEY environment
    variable: this process cannot change its own environment, and the other
    processes would go on signing with the old key.
    """
    if settings.REVIEWAPP_SIGNING_KEY:
        raise RotationRefused(
            "The signing key comes from the REVIEWAPP_SIGNING_KEY environment variable, "
            "which cannot be rotated from here. Add the new seed's public key to "
            "REVIEWAPP_TRUSTED_KEYS (keep the old one there, so old decisions still verify), "
            "put the new base64 seed in that variable and restart every web and worker "
            "process, or switch to REVIEWAPP_SIGNING_KEY_FILE to rotate with this command."
        )
    key_file = Path(settings.REVIEWAPP_SIGNING_KEY_FILE)
    key_file.parent.mkdir(parents=True, exist_ok=True)
    lock_path = key_file.with_name(key_file.name + ".lock")
    with open(lock_path, "a") as lock:
        # One rotation at a time on this host: two would each move the other's key aside.
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            return _rotate_locked(key_file, actor)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _rotate_locked(key_file: Path, actor) -> Rotation:
    old_signer = None
    if key_file.exists():
        try:
            old_signer = Signer.from_file(key_file)
        except (KeyFileError, OSError) as exc:
            raise RotationRefused(f"The current signing key cannot be read: {exc}") from exc

    new_signer = Signer.generate()
    staged = key_file.with_name(f"{key_file.name}.new-{new_signer.key_id}")
    new_signer.to_file(staged)  # mode 0600 from creation, never overwrites
    retired_file = retired_path(key_file, old_signer.key_id) if old_signer else None
    if retired_file is not None and retired_file.exists():
        staged.unlink()
        raise RotationRefused(f"{retired_file} already exists; refusing to overwrite a key.")

    now = timezone.now()
    try:
        with transaction.atomic():
            retired_row = None
            if old_signer is not None:
                # Registered even if it never signed, so nothing it signed can be orphaned.
                retired_row, _ = SigningKey.objects.get_or_create(
                    key_id=old_signer.key_id, defaults={"public_key": old_signer.public_key_b64}
                )
            new_row = SigningKey.objects.create(
                key_id=new_signer.key_id, public_key=new_signer.public_key_b64
            )
            # One key signs at a time: every other key is retired for signing.
            others = SigningKey.objects.filter(retired_at__isnull=True).exclude(pk=new_row.pk)
            retiring = list(others.values_list("key_id", flat=True))
            others.update(retired_at=now)
            if retired_row is not None:
                retired_row.refresh_from_db()
            events.signing_key_rotated.send(
                sender=SigningKey,
                key=new_row,
                by=actor,
                old_key_id=old_signer.key_id if old_signer else None,
                retired=retiring,
                retired_file=retired_file,
            )
            # Inside the transaction: if the files cannot be moved, nothing is recorded.
            if old_signer is not None:
                os.rename(key_file, retired_file)
            os.rename(staged, key_file)
    except BaseException:
        if staged.exists():
            staged.unlink()
        if retired_file is not None and retired_file.exists() and not key_file.exists():
            os.rename(retired_file, key_file)
        raise
    forget_cached_signer()
    return Rotation(new=new_row, retired=retired_row, key_file=key_file, retired_file=retired_file)
