"""Load the demo (idempotently): reviewers group, demo logins, panels, proposals."""

import json
import secrets

from django.conf import settings
from django.core.management.base import BaseCommand

from reviewapp.review.demo import load_demo


class Command(BaseCommand):
    help = "Create the demo reviewer and admin, panels, lenses and proposals (safe to re-run)."

    def handle(self, *args, **options):
        credentials = _credentials()
        summary = load_demo(credentials=credentials)
        self.stdout.write(
            f"Demo: {summary['panels']} panels, {summary['proposals_created']} new proposals "
            f"({summary['proposals_total']} in all) queued for the worker."
        )
        for role, (username, password) in credentials.items():
            self.stdout.write(f"  {role:<8} login: {username} / {password}")


def _credentials() -> dict[str, tuple[str, str]]:
    """Random demo passwords, made once and kept in VAR_DIR so re-runs print the same."""
    path = settings.VAR_DIR / "demo-credentials.json"
    if path.exists():
        stored = json.loads(path.read_text())
    else:
        stored = {
            "reviewer": ["reviewer", secrets.token_urlsafe(9)],
            "admin": ["admin", secrets.token_urlsafe(9)],
        }
        path.touch(mode=0o600)
        path.write_text(json.dumps(stored))
    return {role: tuple(pair) for role, pair in stored.items()}
