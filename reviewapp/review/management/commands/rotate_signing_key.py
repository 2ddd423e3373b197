"""Create a new server signing key and retire the current one for signing."""

import getpass

from django.core.management.base import BaseCommand, CommandError

from reviewapp.review.services.keys import RotationRefused, signing_key_rotate


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
        self.stdout.write(f"New signing key: {rotation.new.key_id} ({rotation.key_file})")
        if rotation.retired is not None:
            self.stdout.write(
                f"Retired for signing: {rotation.retired.key_id} "
                f"(seed moved to {rotation.retired_file}; public key kept for verification)"
            )
        else:
            self.stdout.write("There was no previous key file.")
        self.stdout.write(
            "Add the new public key to the trust anchors (REVIEWAPP_TRUSTED_KEYS, or the file it "
            f"names) before verifying what it signs:\n  {rotation.new.public_key} "
            f"{rotation.new.key_id}"
        )
        self.stdout.write(
            self.style.WARNING("Restart web and worker processes so they sign with the new key.")
        )
