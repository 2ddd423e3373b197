from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "reviewapp.review"
    label = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        from . import signals  # noqa: F401 - registers the receivers
