"""The server's signing key: loaded from the environment or a file, never the database.

Only the public half is registered in `SigningKey`, so anyone holding a stored
decision can verify it with nothing but that public key.
"""

import base64
import functools
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from reviewapp.core.signing import Signer

from .models import SigningKey


@functools.cache
def _load_signer(seed_b64: str, path: str, autocreate: bool, file_identity) -> Signer:
    # `file_identity` (inode, mtime) is part of the cache key so that every
    # process picks up a key file replaced by rotation, not just the rotator.
    if seed_b64:
        try:
            return Signer.from_seed(base64.b64decode(seed_b64, validate=True))
        except ValueError as exc:
            raise ImproperlyConfigured(
                "REVIEWAPP_SIGNING_KEY must be a base64-encoded 32-byte ed25519 seed."
            ) from exc
    key_file = Path(path)
    if not key_file.exists():
        if not autocreate:
            raise ImproperlyConfigured(
                f"No signing key at {key_file}. Set REVIEWAPP_SIGNING_KEY or "
                "REVIEWAPP_SIGNING_KEY_FILE, or run `python manage.py rotate_signing_key`."
            )
        key_file.parent.mkdir(parents=True, exist_ok=True)
        Signer.generate().to_file(key_file)
    return Signer.from_file(key_file)


def server_signer() -> Signer:
    """The active signer; its public key is registered on first use."""
    path = Path(settings.REVIEWAPP_SIGNING_KEY_FILE)
    try:
        stat = path.stat()
        file_identity = (stat.st_ino, stat.st_mtime_ns)
    except FileNotFoundError:
        file_identity = None
    signer = _load_signer(
        settings.REVIEWAPP_SIGNING_KEY,
        str(path),
        settings.REVIEWAPP_SIGNING_KEY_AUTOCREATE,
        None if settings.REVIEWAPP_SIGNING_KEY else file_identity,
    )
    key, _ = SigningKey.objects.get_or_create(
        key_id=signer.key_id, defaults={"public_key": signer.public_key_b64}
    )
    if key.retired_at is not None:
        raise ImproperlyConfigured(
            f"The configured signing key {key.key_id} was retired on {key.retired_at:%Y-%m-%d}; "
            "point REVIEWAPP_SIGNING_KEY(_FILE) at the current key."
        )
    return signer


def forget_cached_signer() -> None:
    """Drop the cached key, so a rotated key file is read again."""
    _load_signer.cache_clear()


def public_key_for(key_id: str) -> bytes | None:
    row = SigningKey.objects.filter(key_id=key_id).values_list("public_key", flat=True).first()
    return base64.b64decode(row) if row else None
