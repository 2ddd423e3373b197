from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "reviewapp.audit"
    label = "audit"
    verbose_name = "Audit"
