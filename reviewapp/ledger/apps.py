from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "reviewapp.ledger"
    label = "ledger"
    verbose_name = "Ledger"
