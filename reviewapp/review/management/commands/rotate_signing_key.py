"""Create a new server signing key and retire the current one for signing."""

import getpass

from django.core.management.base import BaseCommand, CommandError

from reviewapp.review.services.keys import RotationRefused, rotation_report, signing_key_rotate


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown user"
    return f"manage.py rotate_signing_key ({user})"


class Command(BaseCommand):
    help = (
        "Rotate the server's signing key: write a new seed to REVIEWAPP_SIGNING_KEY_FILE "
        "(mode 0600), move the old seed aside to <file>.retired-<key id>, and retire the old "
        "key for signing. Its public key stays registered, so old decisions still verify."
    )

    def handle(self, *args, **options):
        try:
            rotation = signing_key_rotate(actor=_who())
        except RotationRefused as exc:
            raise CommandError(str(exc)) from exc
        for line in rotation_report(rotation):
            self.stdout.write(line)
