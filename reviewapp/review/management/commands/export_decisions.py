from django.core.management.base import BaseCommand

from reviewapp.ledger.services import checkpoint_create, export_lines


class Command(BaseCommand):
    help = (
        "Write the ledger (every signed decision and piece of evidence, with the signed "
        "checkpoints) as JSONL, for `reviewapp-verify`."
    )

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")
        parser.add_argument(
            "--after", type=int, default=None, help="only entries after this ledger index"
        )
        parser.add_argument(
            "--no-checkpoint",
            action="store_true",
            help="do not sign a fresh checkpoint first (the export then ends at older ones)",
        )

    def handle(self, *args, **options):
        if not options["no_checkpoint"]:
            # So the whole export is covered by a signed tree head.
            checkpoint_create(only_if_grown=True)
        lines = export_lines(after=options["after"])
        if options["output"]:
            count = 0
            with open(options["output"], "w", encoding="utf-8") as handle:
                for line in lines:
                    handle.write(line)
                    count += 1
            self.stderr.write(f"wrote {count} lines to {options['output']}")
        else:
            for line in lines:
                self.stdout.write(line, ending="")
