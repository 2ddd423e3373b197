from django.core.management.base import BaseCommand, CommandError

from reviewapp.ledger.cosigning import latest_checkpoint_policy_problem
from reviewapp.review.services.decisions import decisions_verify_chain


class Command(BaseCommand):
    help = (
        "Re-verify every review and audit verdict, every decision signature (with the reviews "
        "it names), that each decision is in the ledger, the hash chain of the decisions "
        "signed before v2, and the latest ledger checkpoint's witness "
        "cosignatures against REVIEWAPP_LEDGER_WITNESS_QUORUM."
    )

    def handle(self, *args, **options):
        result = decisions_verify_chain()
        if result.problem:
            raise CommandError(
                f"{result.problem} ({result.decisions} decisions verified before it)"
            )
        problem = latest_checkpoint_policy_problem()
        if problem:
            raise CommandError(f"ledger {problem} ({result.decisions} decisions verified)")
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.decisions} decisions verified, with {result.reviews} reviews and "
                f"{result.audits} audit verdicts: signatures, ledger entries and chain intact."
            )
        )
