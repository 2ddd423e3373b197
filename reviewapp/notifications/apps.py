from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "reviewapp.notifications"
    label = "notifications"
    verbose_name = "Notifications"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 (connects the receivers)
