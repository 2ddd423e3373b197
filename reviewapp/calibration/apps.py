from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "reviewapp.calibration"
    label = "calibration"
    verbose_name = "Calibration"
