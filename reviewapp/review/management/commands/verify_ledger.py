import time

from django.core.management.base import BaseCommand, CommandError

from reviewapp.review.in_ledger.verification import ledger_verify


class Command(BaseCommand):
    help = (
        "Recompute the ledger's Merkle tree from the database and check every signature, "
        "every stored row against what was signed, each decision once in the log, the hash "
        "chain of the decisions signed before v2, each decision's "
        "evidence, every signed checkpoint and every witnessed one, and the latest "
        "checkpoint's witness cosignatures against REVIEWAPP_LEDGER_WITNESS_QUORUM. Exits "
        "non-zero naming the first bad entry."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="processes checking signatures (default: 2 for large ledgers, else 1)",
        )
        parser.add_argument(
            "--witness",
            action="append",
            default=[],
            metavar="FILE",
            help="a witness log (JSONL of signed checkpoints) to check the tree against, "
            "besides REVIEWAPP_LEDGER_WITNESS_FILE; repeatable",
        )

    def handle(self, *args, **options):
        started = time.perf_counter()
        result = ledger_verify(workers=options["workers"], witness_files=options["witness"])
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        if result.problem:
            raise CommandError(f"ledger verification failed: {result.problem}")
        witnessed = (
            f" The latest checkpoint is cosigned by {', '.join(result.cosigned_by)}."
            if result.cosigned_by
            else ""
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.entries} ledger entries verified ({result.decisions} decisions, "
                f"{result.evidence} evidence) and {result.checkpoints} signed checkpoints, "
                f"with {result.reviews} reviews and {result.audits} audit verdicts "
                f"in {time.perf_counter() - started:.1f}s: signatures, rows, chain and tree intact."
                + witnessed
            )
        )
