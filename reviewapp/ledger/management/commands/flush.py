"""Django's `flush`, able to empty the append-only tables.

The append-only triggers (reviewapp/ledger/immutability.py) refuse
PostgreSQL's TRUNCATE and SQLite's `DELETE FROM` (SQLite has no TRUNCATE),
which is how Django flushes. This command (it shadows Django's, being in an
installed app) runs the flush in one transaction that opens the guard for
itself alone: `SET LOCAL reviewapp.allow_truncate = on` on PostgreSQL, this
connection's `reviewapp_deletes_allowed()` on SQLite. pytest-django's
between-test flush of transactional tests calls `flush` by name, so it goes
through here too. Everything else about flush is Django's.
"""

from django.core.management.commands import flush
from django.db import connections, transaction

from reviewapp.ledger.immutability import FlushAllowed


class Command(flush.Command):
    def handle(self, **options):
        database = options["database"]
        connection = connections[database]
        if connection.vendor not in ("postgresql", "sqlite"):
            return super().handle(**options)
        with transaction.atomic(using=database), FlushAllowed(connection):
            return super().handle(**options)
