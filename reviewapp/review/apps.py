from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "reviewapp.review"
    label = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        from reviewapp.startup import prepare_var_dir

        from . import signals  # noqa: F401 - registers the receivers

        # Every process that sets Django up (servers, workers, manage.py, the tests)
        # writes under the var directory: the SQLite file, keys, the cache.
        prepare_var_dir()
