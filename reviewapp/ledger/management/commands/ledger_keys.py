import base64

from django.core.management.base import BaseCommand

from reviewapp.core.cosignature import LOG_KEY_TYPE, VerifierKey
from reviewapp.ledger.keys import public_keys_b64, trusted_keys
from reviewapp.ledger.models import SigningKey
from reviewapp.ledger.services import ledger_origin


class Command(BaseCommand):
    help = (
        "Print every trusted public key (the trust anchors) the server has signed with, one per "
        "line (`<base64 key> <key id>`), for `reviewapp-verify --public-key FILE` and "
        "REVIEWAPP_TRUSTED_KEYS. Key rows that are not trust anchors are named on stderr. "
        "`--vkey` prints them as C2SP note verifier keys of the ledger's origin instead, for a "
        "witness's configuration (`run_witness --log`)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--vkey",
            action="store_true",
            help="print `<origin>+<key id>+<base64 key>` lines (C2SP signed-note verifier keys)",
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
            if options["vkey"]:
                raw = base64.b64decode(public_key)
                self.stdout.write(VerifierKey(ledger_origin(), LOG_KEY_TYPE, raw).text())
                continue
            note = f" retired {retired_at:%Y-%m-%d}" if retired_at else ""
            self.stdout.write(f"{public_key} {key_id}{note}")
