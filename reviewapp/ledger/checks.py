"""`manage.py check --deploy`: warn when the key the server signs with is not a trust anchor.

Everything that key signs would then fail verification, naming the key; the
warning says so before the first decision does.
"""

import base64
from pathlib import Path

from django.conf import settings
from django.core.checks import Warning, register
from django.core.exceptions import ImproperlyConfigured

from reviewapp.core.signing import KeyFileError, Signer

from .keys import trusted_keys


def _current_signer() -> Signer | None:
    if settings.REVIEWAPP_SIGNING_KEY:
        return Signer.from_seed(base64.b64decode(settings.REVIEWAPP_SIGNING_KEY))
    path = Path(settings.REVIEWAPP_SIGNING_KEY_FILE)
    return Signer.from_file(path) if path.exists() else None


@register(deploy=True)
def signing_key_is_anchored(app_configs, **kwargs):
    try:
        signer = _current_signer()
        anchored = signer is None or signer.key_id in trusted_keys()
    except (ValueError, KeyFileError, OSError, ImproperlyConfigured) as exc:
        return [
            Warning(
                f"the trust anchors or the signing key cannot be read: {exc}", id="reviewapp.W101"
            )
        ]
    if anchored:
        return []
    return [
        Warning(
            f"the signing key {signer.key_id} is not a trust anchor: everything it signs fails "
            "verification",
            hint=f"add `{signer.public_key_b64} {signer.key_id}` to REVIEWAPP_TRUSTED_KEYS "
            "(or the file it names)",
            id="reviewapp.W100",
        )
    ]
