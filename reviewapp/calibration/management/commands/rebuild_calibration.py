"""Write every lens's human labels again from the decisions and audit verdicts.

Run once after upgrading to a release with the calibration app: decisions made
before it have no labels, so the agreement figures would start empty.
"""

from django.core.management.base import BaseCommand
from django.db import transaction

from reviewapp.calibration.services import labels_rebuild


class Command(BaseCommand):
    help = (
        "Rebuild the human labels and per-day agreement tables from every reviewer decision "
        "and audit verdict (after an upgrade, or a bulk load). Drift state is kept."
    )

    def handle(self, *args, **options):
        with transaction.atomic():
            labels = labels_rebuild()
        self.stdout.write(f"{labels} human label(s) written from the decisions and audits.")
