from django.apps import AppConfig


class InsightsConfig(AppConfig):
    name = "reviewapp.insights"
    label = "insights"
    verbose_name = "Insights"
