from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class LedgerConfig(AppConfig):
    name = "reviewapp.ledger"
    label = "ledger"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the deploy check
        from .immutability import register_sqlite_function, reinstall_after_migrate

        post_migrate.connect(
            reinstall_after_migrate, sender=self, dispatch_uid="ledger_append_only_triggers"
        )
        connection_created.connect(
            register_sqlite_function, dispatch_uid="ledger_sqlite_delete_guard"
        )
