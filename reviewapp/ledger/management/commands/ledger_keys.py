from django.core.management.base import BaseCommand

from reviewapp.review.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import SigningKey


class Command(BaseCommand):
    help = (
        "Print every trusted public key (the trust anchors) the server has signed with, one per "
        "line (`<base64 key> <key id>`), for `reviewapp-verify --public-key FILE` and "
        "REVIEWAPP_TRUSTED_KEYS. Key rows that are not trust anchors are named on stderr."
    )

    def handle(self, *args, **options):
        trusted = public_keys_b64(trusted_keys())
        for key_id, public_key, retired_at in SigningKey.objects.order_by(
            "created_at", "pk"
        ).values_list("key_id", "public_key", "retired_at"):
            if trusted.get(key_id) != public_key:
                self.stderr.write(
                    self.style.WARNING(
                        f"not a trust anchor, not listed: key row {key_id} ({public_key})"
                    )
                )
                continue
            note = f" retired {retired_at:%Y-%m-%d}" if retired_at else ""
            self.stdout.write(f"{public_key} {key_id}{note}")
