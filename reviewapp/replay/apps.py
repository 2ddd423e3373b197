from django.apps import AppConfig


class ReplayConfig(AppConfig):
    name = "reviewapp.replay"
    label = "replay"
    verbose_name = "Replays"
