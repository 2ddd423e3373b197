"""A hostile command checker on the real worker: nothing secret comes back out.

The checker tries to read every process's environment, the signing key file
and the database file, prints whatever it got and exits 1, so its stderr
becomes the signed evidence reason. That reason is stored, put in the ledger
and served; no secret of the worker may be in any of it.
"""

import pytest
from django.conf import settings
from django.test import override_settings

from reviewapp.ledger.keys import server_signer
from reviewapp.review.evaluation.checker_sandbox import checker_sandbox
from reviewapp.review.models import CheckerConfig, Evidence, Proposal
from tests.conftest import wait_for
from tests.factories import LensFactory, PanelFactory, ReviewerFactory, recorded
from tests.review.helpers import judgement, submit
from tests.support.worker import test_database_url as worker_database_url

CONTENT = "The migration is reversible."

HOSTILE = """
import glob, os, sys
def attempt(what, path):
    try:
        with open(path, "rb") as f:
            print(f"{what}: GOT", f.read().decode("utf-8", "replace"), file=sys.stderr)
    except Exception as exc:
        print(f"{what}: refused ({type(exc).__name__})", file=sys.stderr)
print("env:", dict(os.environ), file=sys.stderr)
attempt("parent", f"/proc/{os.getppid()}/environ")
for path in glob.glob("/proc/[0-9]*/environ"):
    attempt(path, path)
attempt("key", sys.argv[1])
attempt("database", sys.argv[2])
sys.exit(1)
"""


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_hostile_checker_on_the_worker_leaks_no_secret(worker, client):
    seed = server_signer() and settings.REVIEWAPP_SIGNING_KEY_FILE.read_text().strip()
    database = settings.DATABASES["default"]["NAME"]
    checker = CheckerConfig.objects.create(
        name="hostile",
        kind=CheckerConfig.Kind.COMMAND,
        settings={
            "argv": [
                "/usr/bin/python3",
                "-c",
                HOSTILE,
                str(settings.REVIEWAPP_SIGNING_KEY_FILE),
                str(database),
            ],
            "timeout_seconds": 20,
        },
        grants=["proc:exec:/usr/bin/**"],
    )
    lens = LensFactory()
    recorded(lens, CONTENT, judgement("pass"))
    proposal = submit(PanelFactory(lenses=[lens], need=1, checkers=[checker]), CONTENT)
    done = wait_for(
        lambda: Proposal.objects.get(pk=proposal.pk).is_final, timeout=60, message=worker.log()
    )
    assert done
    reason = Evidence.objects.get(proposal=proposal).reason
    assert "key: refused" in reason and "database: refused" in reason, reason
    assert "env: {'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8'}" in reason

    client.force_login(ReviewerFactory())
    with override_settings(REVIEWAPP_LEDGER_PUBLIC=True):
        responses = [
            client.get(url)
            for url in (
                "/api/ledger/entries",
                "/decisions/export.jsonl",
                "/exports/proposals.jsonl",
                "/exports/proposals.csv",
                f"/proposals/{proposal.pk}",
            )
        ]
    assert [r.status_code for r in responses] == [200] * 5
    served = [(r.getvalue() if r.streaming else r.content).decode() for r in responses]
    assert all("key: refused" in text for text in served[:2]), "the reason is served"
    secrets = [settings.SECRET_KEY, worker_database_url(), seed]
    for text in [reason, *served]:
        for secret in secrets:
            assert secret not in text


def test_the_sandbox_hides_the_apps_data_and_secrets(settings, tmp_path):
    settings.REVIEWAPP_CHECKER_HIDE = [str(tmp_path / "extra")]
    settings.REVIEWAPP_CHECKER_USER = "daemon"
    sandbox = checker_sandbox()
    assert sandbox.user == "daemon"
    assert set(sandbox.hidden) >= {
        str(settings.VAR_DIR),
        str(settings.BASE_DIR / ".env"),
        str(settings.REVIEWAPP_SIGNING_KEY_FILE),
        str(tmp_path / "extra"),
    }
    if settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        assert str(settings.DATABASES["default"]["NAME"]) in sandbox.hidden


def test_the_sandbox_keeps_the_checkout_and_configured_paths_readable(settings, tmp_path):
    settings.REVIEWAPP_CHECKER_READABLE = [str(tmp_path / "scripts")]
    assert checker_sandbox().readable == (str(settings.BASE_DIR), str(tmp_path / "scripts"))
