from django.apps import AppConfig


class NotificationsConfig(AppConfig):
    name = "reviewapp.notifications"
    label = "notifications"
    verbose_name = "Notifications"
