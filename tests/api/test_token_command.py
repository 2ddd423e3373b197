import hashlib
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from reviewapp.review.models import ApiClient
from tests.factories import ReviewerFactory

from .conftest import Api

ROOT = Path(__file__).resolve().parents[2]


def create(*args) -> list[str]:
    """What a person reads (standard error), then the token (standard output)."""
    out, err = StringIO(), StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=err)
    return err.getvalue().strip().splitlines() + out.getvalue().strip().splitlines()


def test_standard_output_is_the_token_alone(db):
    out = StringIO()
    call_command("create_api_token", "ci-bot", "--scopes", "read", stdout=out, stderr=StringIO())

    [token] = out.getvalue().splitlines()
    assert token.startswith(ApiClient.objects.get(name="ci-bot").token_prefix)


def test_a_settings_error_prints_nothing_on_standard_output_and_says_what_to_set(tmp_path):
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")
    }
    environment["REVIEWAPP_VAR_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "manage.py", "create_api_token", "agent", "--scopes", "read"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode != 0
    assert done.stdout == ""
    assert "SECRET_KEY is not set" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_token_prints_nothing_on_standard_output(db):
    create("ci-bot", "--scopes", "read")
    out = StringIO()

    with pytest.raises(CommandError):
        call_command("create_api_token", "ci-bot", "--scopes", "read", stdout=out)
    assert out.getvalue() == ""


def test_last_line_of_output_is_the_token_stored_only_as_its_hash(db):
    token = create("ci-bot", "--scopes", "submit,read")[-1]

    client = ApiClient.objects.get(name="ci-bot")
    assert client.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert client.token_hash != token
    assert token not in (client.name, client.token_prefix, client.token_hash)


def test_output_shows_the_visible_prefix_of_the_token(db):
    lines = create("ci-bot", "--scopes", "read")

    client = ApiClient.objects.get(name="ci-bot")
    assert lines[-1].startswith(client.token_prefix)
    assert any(client.token_prefix in line for line in lines[:-1])


def test_token_is_stored_with_the_given_scopes(db):
    create("ci-bot", "--scopes", "submit,judge,read,review")

    assert ApiClient.objects.get(name="ci-bot").scopes == ["submit", "judge", "read", "review"]


def test_printed_token_authenticates(db):
    token = create("ci-bot", "--scopes", "read")[-1]

    assert Api(token).get("/api/proposals").status_code == 200


def test_unknown_scope_is_refused_and_nothing_stored(db):
    with pytest.raises(CommandError, match="unknown scope admin"):
        create("ci-bot", "--scopes", "read,admin")

    assert not ApiClient.objects.exists()


def test_taken_name_is_refused(db):
    create("ci-bot", "--scopes", "read")

    with pytest.raises(CommandError, match="already exists"):
        create("ci-bot", "--scopes", "read")


def test_read_all_is_granted_only_when_asked_for(db):
    create("auditor", "--scopes", "read,read:all")
    create("agent", "--scopes", "submit,read")

    assert ApiClient.objects.get(name="auditor").scopes == ["read", "read:all"]
    assert "read:all" not in ApiClient.objects.get(name="agent").scopes


def test_a_personal_token_is_created_for_a_reviewer(db):
    ReviewerFactory(username="ann")
    lines = create("ann-laptop", "--scopes", "review", "--user", "ann")

    assert "acting as ann" in lines[0]
    assert ApiClient.objects.get(name="ann-laptop").user.username == "ann"


def test_a_personal_token_for_an_unknown_user_is_refused(db):
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        create("x", "--scopes", "review", "--user", "nobody")
