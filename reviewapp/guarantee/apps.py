from django.apps import AppConfig


class GuaranteeConfig(AppConfig):
    name = "reviewapp.guarantee"
    label = "guarantee"
    verbose_name = "Guarantee"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects the routing policy and the labels)
