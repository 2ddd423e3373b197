from django.conf import settings
from django.core.management.base import BaseCommand

from reviewapp.ledger.cosigning import configured_witnesses, latest_cosigned_checkpoint
from reviewapp.ledger.services import checkpoint_create, export_lines, tree_size


class Command(BaseCommand):
    help = (
        "Write the ledger (every signed decision and piece of evidence, the reviews the "
        "decisions name, with the signed checkpoints) as JSONL, for `reviewapp-verify`. With "
        "witnesses configured, the export ends at the latest checkpoint they cosigned (the "
        "entries after it are included, and named on standard error)."
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
            # So the whole export is covered by a signed tree head (and its witnesses
            # asked to cosign it, for the next export).
            checkpoint_create(only_if_grown=True)
        through = None
        if configured_witnesses():
            through = latest_cosigned_checkpoint()
            self.stderr.write(self._witnessed(through))
        lines = export_lines(after=options["after"], through=through)
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

    @staticmethod
    def _witnessed(through) -> str:
        """What a verifier holding the export to the witnesses will find, and when to come back."""
        wait = (
            "the witnesses cosign a checkpoint within seconds of its signing (one that missed "
            "it, within REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS = "
            f"{settings.REVIEWAPP_LEDGER_WITNESS_CATCH_UP_SECONDS:g} s)"
        )
        if through is None:
            return (
                "no checkpoint is cosigned by a witness yet: a verifier given --witness-key "
                f"will refuse this export; {wait}: export again in a minute"
            )
        after = tree_size() - through.tree_size
        said = f"exported against the checkpoint for size {through.tree_size}, cosigned"
        if after:
            said += (
                f"; the {after} entries after it are in the export, but no witness vouches for "
                f"them yet ({wait}: export again to include them)"
            )
        return said
