"""The server's signing key, and the keys its verifiers trust: never from the database.

Only the public half is registered in `SigningKey`, so anyone holding a stored
decision can verify it with nothing but that public key. But a `SigningKey`
row is only a label: whoever can write the database could insert one, so
every verifier takes its keys from `trusted_keys()` — the trust anchors in
REVIEWAPP_TRUSTED_KEYS, plus, with REVIEWAPP_TRUST_OWN_KEY (on in DEBUG), the
public halves of the key files on this host.
"""

import base64
import functools
import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from reviewapp_client.verify.files import load_public_keys

from reviewapp.compiled_queries import CompiledQuery
from reviewapp.core.signing import KeyFileError, Signer, key_id_for

from .models import SigningKey

# Read on every signature: the key's row, with its retirement.
_registered = CompiledQuery(lambda key_id: SigningKey.objects.filter(key_id=key_id)[:1])


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
        _create_key_file(key_file)
    return Signer.from_file(key_file)


def _create_key_file(key_file: Path) -> None:
    """A new key at `key_file`, unless another process or thread made one first: then theirs.

    The first decisions after a start come from every pool process (and
    their recorder threads) at once. The key is written whole under a name
    of its own, then linked into place: no reader sees a half-written file,
    and of two creators one wins and the other signs with its key.
    """
    key_file.parent.mkdir(parents=True, exist_ok=True)
    staged = key_file.with_name(f".{key_file.name}.{secrets.token_hex(8)}.new")
    Signer.generate().to_file(staged)
    try:
        os.link(staged, key_file)
    except FileExistsError:
        pass
    finally:
        staged.unlink()


def active_signer_without_database() -> Signer:
    """The configured signer, or ImproperlyConfigured saying what to set (no database needed)."""
    return _load_signer(
        settings.REVIEWAPP_SIGNING_KEY,
        str(settings.REVIEWAPP_SIGNING_KEY_FILE),
        settings.REVIEWAPP_SIGNING_KEY_AUTOCREATE,
        None,
    )


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
    key = _registered.first(signer.key_id)
    if key is None:
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


def anchored_keys(values) -> list[bytes]:
    """Public keys from REVIEWAPP_TRUSTED_KEYS items (base64 keys or files of them)."""
    keys = []
    for value in values:
        try:
            keys.extend(load_public_keys(value))
        except (ValueError, OSError) as exc:
            raise ImproperlyConfigured(f"REVIEWAPP_TRUSTED_KEYS: {exc}") from exc
    return keys


def _own_public_keys() -> list[bytes]:
    """The configured signing key and the retired seeds rotation moved aside next to it."""
    if settings.REVIEWAPP_SIGNING_KEY:
        seed = settings.REVIEWAPP_SIGNING_KEY
        return [_load_signer(seed, "", False, None).public_key]
    key_file = Path(settings.REVIEWAPP_SIGNING_KEY_FILE)
    keys = []
    for path in [key_file, *sorted(key_file.parent.glob(f"{key_file.name}.retired-*"))]:
        try:
            keys.append(Signer.from_file(path).public_key)
        except FileNotFoundError:
            continue
        except (KeyFileError, OSError) as exc:
            raise ImproperlyConfigured(f"REVIEWAPP_TRUST_OWN_KEY: {exc}") from exc
    return keys


def trusted_keys() -> dict[str, bytes]:
    """key id → public key, for every key a verifier may accept a signature from.

    Read on every call (a few small files), so a key added to the anchors
    file is trusted without a restart.
    """
    keys = anchored_keys(settings.REVIEWAPP_TRUSTED_KEYS)
    if settings.REVIEWAPP_TRUST_OWN_KEY:
        keys += _own_public_keys()
    return {key_id_for(key): key for key in keys}


def public_keys_b64(keys: dict[str, bytes]) -> dict[str, str]:
    return {key_id: base64.b64encode(key).decode() for key_id, key in keys.items()}


def untrusted_key_problem(key_id: str) -> str:
    """How a verifier says a signature's key is not a trust anchor."""
    return (
        f"signed by key {key_id}, which is not a trusted key "
        "(not in REVIEWAPP_TRUSTED_KEYS): a key row in the database is not a trust anchor"
    )


def public_key_for(key_id: str) -> bytes | None:
    """The trusted public key with this id, or None: never a key only the database knows."""
    return trusted_keys().get(key_id)
