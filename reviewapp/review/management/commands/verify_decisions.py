from django.core.management.base import BaseCommand, CommandError

from reviewapp.review.services.decisions import decisions_verify_chain


class Command(BaseCommand):
    help = "Re-verify every decision signature and the hash chain."

    def handle(self, *args, **options):
        checked, problem = decisions_verify_chain()
        if problem:
            raise CommandError(f"{problem} ({checked} decisions verified before it)")
        self.stdout.write(
            self.style.SUCCESS(f"{checked} decisions verified: signatures and chain intact.")
        )
