"""The decisions log's download: streamed JSONL, staff and reviewers only."""

import pytest
from reviewapp_client.verify import load_public_keys, verify_file

from tests.factories import ReviewerFactory, UserFactory
from tests.ledger.helpers import decide, export, public_key_b64

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.ledger.urls")]

URL = "/decisions/export.jsonl"


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_setting_opens_the_export_to_anonymous_visitors(client, settings, tmp_path):
    decide(1)
    expected = export(tmp_path)
    settings.REVIEWAPP_LEDGER_PUBLIC = True
    response = client.get(URL)
    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode() == expected.read_text()


def test_signed_in_non_reviewers_are_refused(client):
    client.force_login(UserFactory())
    assert client.get(URL).status_code == 403


@pytest.mark.parametrize("make_user", [ReviewerFactory, lambda: UserFactory(is_staff=True)])
def test_reviewers_and_staff_download_a_verifiable_stream(client, tmp_path, make_user):
    decide(2)
    expected = export(tmp_path)  # signs the checkpoint the download ends with
    client.force_login(make_user())
    response = client.get(URL)
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert 'filename="reviewapp-ledger.jsonl"' in response["Content-Disposition"]
    body = b"".join(response.streaming_content).decode()
    assert body == expected.read_text()
    path = tmp_path / "download.jsonl"
    path.write_text(body)
    report = verify_file(str(path), load_public_keys(public_key_b64()))
    assert (report.entries, report.checkpoints) == (4, 1)


def test_after_exports_the_tail(client, tmp_path):
    decide(2)
    client.force_login(ReviewerFactory())
    response = client.get(URL + "?after=1")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert '"start":2' in lines[0] and len(lines) == 3
    assert client.get(URL + "?after=x").status_code == 400
    assert client.get(URL + "?after=-1").status_code == 400
