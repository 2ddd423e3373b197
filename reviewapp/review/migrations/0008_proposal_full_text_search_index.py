"""A GIN index for full-text search over proposals' title and content (PostgreSQL only).

Created with the very expression reviewapp.review.search defines and the
searches use, so the planner uses it. It is kept out of the model's Meta on purpose: SQLite has no
GIN, and a Meta index would be re-created whenever SQLite rebuilds the table.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

INDEX_NAME = "proposal_search"


def _index():
    from reviewapp.review.search import proposal_search_vector

    return GinIndex(proposal_search_vector(), name=INDEX_NAME)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("review", "Proposal"), _index())


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("review", "Proposal"), _index())


class Migration(migrations.Migration):
    dependencies = [("review", "0007_endpoint_limits_and_final_step_attempts")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
