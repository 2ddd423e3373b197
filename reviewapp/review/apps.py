from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "reviewapp.review"
    label = "review"
    verbose_name = "Review"
