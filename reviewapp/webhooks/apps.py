from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "reviewapp.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 - connects them to review's events
