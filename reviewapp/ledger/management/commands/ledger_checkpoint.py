from django.core.management.base import BaseCommand

from reviewapp.ledger.services import checkpoint_create, latest_checkpoint


class Command(BaseCommand):
    help = (
        "Sign a checkpoint (C2SP tlog-checkpoint) of the ledger's current tree head and print it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--if-grown",
            action="store_true",
            help="only sign if entries were appended since the latest checkpoint",
        )

    def handle(self, *args, **options):
        checkpoint = checkpoint_create(only_if_grown=options["if_grown"])
        if checkpoint is None:
            latest = latest_checkpoint()
            self.stdout.write(
                f"ledger unchanged since checkpoint {latest.tree_size}; nothing signed"
            )
            return
        self.stdout.write(checkpoint.note, ending="")
