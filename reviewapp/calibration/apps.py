from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "reviewapp.calibration"
    label = "calibration"
    verbose_name = "Calibration"

    def ready(self) -> None:
        from . import receivers  # noqa: F401 - connects them to review's events
