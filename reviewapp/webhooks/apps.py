from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "reviewapp.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
