"""Django's `flush`, able to empty the append-only tables on SQLite.

PostgreSQL flushes with TRUNCATE, which fires no row trigger. SQLite has no
TRUNCATE: Django flushes with `DELETE FROM`, which the ledger's append-only
DELETE triggers refuse. This command (it shadows Django's, being in an
installed app) opens the SQLite delete guard for the duration of the flush,
inside one transaction, and closes it again; the test suite's between-test
flush goes through here too. Everything else about flush is Django's.
"""

from django.core.management.commands import flush
from django.db import connections, transaction

from reviewapp.ledger.immutability import SqliteDeletesAllowed


class Command(flush.Command):
    def handle(self, **options):
        database = options["database"]
        connection = connections[database]
        if connection.vendor != "sqlite":
            return super().handle(**options)
        with transaction.atomic(using=database), SqliteDeletesAllowed(connection):
            return super().handle(**options)
