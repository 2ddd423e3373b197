from django.core.management.base import BaseCommand

from reviewapp.review.models import SigningKey


class Command(BaseCommand):
    help = (
        "Print every public key the server has signed with, one per line "
        "(`<base64 key> <key id>`), for `python -m reviewapp.verify --public-key FILE`."
    )

    def handle(self, *args, **options):
        for key_id, public_key, retired_at in SigningKey.objects.order_by(
            "created_at", "pk"
        ).values_list("key_id", "public_key", "retired_at"):
            note = f" retired {retired_at:%Y-%m-%d}" if retired_at else ""
            self.stdout.write(f"{public_key} {key_id}{note}")
