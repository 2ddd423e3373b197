from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "reviewapp.audit"
    label = "audit"
    verbose_name = "Audit"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 - connects them to review's events
