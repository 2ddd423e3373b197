from django.apps import AppConfig
from django.db.models.signals import post_migrate


class LedgerConfig(AppConfig):
    name = "reviewapp.ledger"
    label = "ledger"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from .immutability import reinstall_after_migrate

        post_migrate.connect(
            reinstall_after_migrate, sender=self, dispatch_uid="ledger_append_only_triggers"
        )
