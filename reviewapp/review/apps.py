from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "reviewapp.review"
    label = "review"
    verbose_name = "Review"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from reviewapp.ledger.services.export import register_export_companions
        from reviewapp.startup import prepare_var_dir

        from . import signals  # noqa: F401 - registers the receivers
        from .access_loss import reinstall_after_migrate
        from .in_ledger.export import reviews_before_decisions

        # Every process that sets Django up (servers, workers, manage.py, the tests)
        # writes under the var directory: the SQLite file, keys, the cache.
        prepare_var_dir()
        post_migrate.connect(
            reinstall_after_migrate, sender=self, dispatch_uid="review_access_loss_triggers"
        )
        # The export carries each decision's reviews before it.
        register_export_companions(reviews_before_decisions)
