from django.core.management.base import BaseCommand, CommandError

from reviewapp.core.cosignature import CosignatureError
from reviewapp.core.signing import KeyFileError, Signer
from reviewapp.core.witness_protocol import logs_by_origin, parse_log
from reviewapp.ledger.witness_server import (
    StateError,
    Witness,
    WitnessState,
    serve,
    witness_vkey,
)


class Command(BaseCommand):
    help = (
        "Run a C2SP tlog-witness: serve POST /add-checkpoint, cosigning each checkpoint of the "
        "given logs that is consistent with every one it cosigned before. `--init-key FILE "
        "--name NAME` creates the witness key once and prints its verifier key (for the logs' "
        "REVIEWAPP_LEDGER_WITNESSES)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--name",
            required=True,
            help="the witness's key name, a schema-less URL such as witness.example.org/w1",
        )
        parser.add_argument("--init-key", metavar="FILE", help="create the key file and exit")
        parser.add_argument("--key-file", metavar="FILE", help="the witness's key (mode 0600)")
        parser.add_argument(
            "--log",
            action="append",
            default=[],
            metavar="VKEY",
            help="a log to witness: its note verifier key (`manage.py ledger_keys --vkey` on "
            "a reviewapp), whose name is the log's origin, or `'<origin> <vkey>'`; repeatable, "
            "several keys for one origin are all trusted",
        )
        parser.add_argument("--state", metavar="FILE", help="the witness's state (JSON)")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8123)

    def handle(self, *args, **options):
        if options["init_key"]:
            signer = Signer.generate()
            try:
                vkey = witness_vkey(options["name"], signer)
                signer.to_file(options["init_key"])
            except CosignatureError as exc:
                raise CommandError(str(exc)) from exc
            except FileExistsError as exc:
                raise CommandError(f"{exc.filename} exists; a key is never replaced") from exc
            self.stdout.write(vkey.text())
            return
        for required in ("key_file", "state", "log"):
            if not options[required]:
                flag = "--" + required.replace("_", "-")
                raise CommandError(f"{flag} is required (or --init-key FILE to create a key)")
        try:
            signer = Signer.from_file(options["key_file"])
            witness_vkey(options["name"], signer)
            logs = logs_by_origin([parse_log(text) for text in options["log"]])
            state = WitnessState(options["state"])
        except (OSError, KeyFileError, CosignatureError, StateError) as exc:
            raise CommandError(str(exc)) from exc
        witness = Witness(name=options["name"], signer=signer, logs=logs, state=state)
        server = serve(witness, options["host"], options["port"])
        host, port = server.server_address[:2]
        self.stdout.write(
            f"witness {witness.vkey.text()}\n"
            f"cosigning {', '.join(sorted(logs))} at http://{host}:{port}/add-checkpoint",
        )
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
