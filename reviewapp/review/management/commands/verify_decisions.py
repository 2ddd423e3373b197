from django.core.management.base import BaseCommand, CommandError

from reviewapp.ledger.cosigning import latest_checkpoint_policy_problem
from reviewapp.review.services.decisions import decisions_verify_chain


class Command(BaseCommand):
    help = (
        "Re-verify every decision signature and the hash chain, and the latest ledger "
        "checkpoint's witness cosignatures against REVIEWAPP_LEDGER_WITNESS_QUORUM."
    )

    def handle(self, *args, **options):
        checked, problem = decisions_verify_chain()
        if problem:
            raise CommandError(f"{problem} ({checked} decisions verified before it)")
        problem = latest_checkpoint_policy_problem()
        if problem:
            raise CommandError(f"ledger {problem} ({checked} decisions verified)")
        self.stdout.write(
            self.style.SUCCESS(f"{checked} decisions verified: signatures and chain intact.")
        )
