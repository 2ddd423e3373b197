"""The models and their migrations agree: a code change that alters a table ships its migration."""

from io import StringIO

from django.core.management import call_command


def test_the_models_need_no_migration_their_migrations_lack(db):
    out = StringIO()
    # --check exits non-zero (SystemExit) when a migration is missing.
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
