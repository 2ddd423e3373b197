"""Checkers through the admin: the live constraints preview and the grant ceiling."""

import re
import sys

import pytest

from reviewapp.audit.trials import TrialFailed, checker_trial
from reviewapp.review.models import CheckerConfig
from tests.factories import CheckerFactory

from .helpers import add_url, change_url, errors_of

pytestmark = pytest.mark.django_db

PREVIEW = "/admin/review/checkerconfig/constraints-preview/"


def preview(client, text: str) -> str:
    response = client.post(PREVIEW, {"mandate": text}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def checker_data(**overrides) -> dict:
    data = {
        "name": "gate",
        "kind": "constraints",
        "active": "on",
        "mandate": "",
        "schema": "",
        "pattern": "",
        "argv": "",
        "timeout_seconds": "10",
        "grants": "",
        "_save": "Save",
    }
    data.update(overrides)
    return data


def test_preview_lists_checkable_clauses_with_their_predicate_and_unenforced_ones(
    admin_client_ada,
):
    html = preview(admin_client_ada, 'must contain "refund"; be friendly; must be at most 50 words')
    assert "2 checkable, 1 unenforced" in html
    assert html.count('data-clause="checkable"') == 2
    assert html.count('data-clause="unenforced"') == 1
    assert "must contain &#x27;refund&#x27;" in html  # the predicate in words
    assert "must be at most 50 words" in html
    assert "be friendly" in html
    assert "data-refusal" not in html


def test_preview_explains_why_under_n_words_is_unenforced_while_at_most_is_checked(
    admin_client_ada,
):
    html = preview(admin_client_ada, "must be under 50 words; must be at most 200 words")
    unenforced = re.search(r'<li class="unenforced".*?</li>', html, re.S).group(0)
    assert "must be under 50 words" in unenforced
    assert "worded otherwise, so nothing counts its words" in unenforced
    assert "Write it as “must be at most N words”" in unenforced
    assert 'data-clause="checkable"' in html and "at most 200 words" in html
    assert "steers the model" not in html


def test_an_unenforced_clause_says_it_counts_neither_as_met_nor_broken(admin_client_ada):
    html = preview(admin_client_ada, 'be friendly; must contain "refund"')
    assert "counts neither as met nor as broken" in html
    assert "must be valid JSON" in html  # the forms that would be checked are listed


def test_preview_shows_the_refusal_when_nothing_is_checkable(admin_client_ada):
    html = preview(admin_client_ada, "be friendly; sound confident")
    assert "0 checkable, 2 unenforced" in html
    assert "data-refusal" in html
    assert "none of these constraints can be checked mechanically" in html


def test_preview_shows_the_refusal_for_an_invalid_pattern(admin_client_ada):
    html = preview(admin_client_ada, "must match /([a-z]/")
    assert "data-refusal" in html
    assert "is not a valid regular expression" in html


def test_the_mandate_field_posts_to_the_preview_as_you_type(admin_client_ada):
    page = admin_client_ada.get(add_url("checkerconfig")).content.decode()
    assert f'hx-post="{PREVIEW}"' in page
    assert 'hx-trigger="input changed delay:300ms"' in page
    assert "vendor/htmx.min.js" in page


def test_the_preview_is_staff_only(client, reviewer):
    client.force_login(reviewer)
    response = client.post(PREVIEW, {"mandate": 'must contain "x"'})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_command_grants_above_the_ceiling_are_refused_on_save_naming_them(admin_client_ada):
    response = admin_client_ada.post(
        add_url("checkerconfig"),
        checker_data(
            kind="command",
            argv=f"{sys.executable}\n-c\nimport sys; sys.exit(0)",
            grants=f"proc:exec:{sys.executable}\nnet:connect\nsecret:read",
        ),
    )
    assert response.status_code == 200
    text = errors_of(response)
    assert "net:connect" in text and "secret:read" in text
    assert "outside what a checker may hold" in text
    assert not CheckerConfig.objects.exists()


def test_a_command_checker_within_the_ceiling_is_saved(admin_client_ada):
    response = admin_client_ada.post(
        add_url("checkerconfig"),
        checker_data(
            kind="command",
            argv=f"{sys.executable}\n-c\nimport sys; sys.exit(0)",
            grants=f"proc:exec:{sys.executable}",
            timeout_seconds="5",
        ),
    )
    assert response.status_code == 302, errors_of(response)
    checker = CheckerConfig.objects.get(name="gate")
    assert checker.settings == {
        "argv": [sys.executable, "-c", "import sys; sys.exit(0)"],
        "timeout_seconds": 5.0,
    }
    assert checker.grants == [f"proc:exec:{sys.executable}"]


def test_a_command_without_an_exec_grant_is_refused(admin_client_ada):
    response = admin_client_ada.post(
        add_url("checkerconfig"), checker_data(kind="command", argv="/bin/true")
    )
    assert "needs a proc:exec grant" in errors_of(response)


def test_a_constraints_checker_with_nothing_checkable_is_refused(admin_client_ada):
    response = admin_client_ada.post(add_url("checkerconfig"), checker_data(mandate="be nice"))
    assert "none of these constraints can be checked" in errors_of(response)
    assert not CheckerConfig.objects.exists()


def test_editing_a_checker_keeps_its_settings_and_bumps_its_version(admin_client_ada):
    checker = CheckerFactory(
        name="gate", kind="regex", settings={"pattern": "a", "must_match": True}
    )
    page = admin_client_ada.get(change_url("checkerconfig", checker.pk)).content.decode()
    assert 'value="a"' in page
    response = admin_client_ada.post(
        change_url("checkerconfig", checker.pk),
        checker_data(kind="regex", pattern="b", must_match="on"),
    )
    assert response.status_code == 302, errors_of(response)
    checker.refresh_from_db()
    assert checker.settings == {"pattern": "b", "must_match": True} and checker.version == 2


def test_run_on_sample_reports_the_verdict_without_storing_evidence():
    checker = CheckerFactory(kind="constraints", settings={"mandate": 'must contain "refund"'})
    assert checker_trial(checker=checker, content="You get a refund.")["verdict"] == "pass"
    failed = checker_trial(checker=checker, content="No money back.")
    assert failed["verdict"] == "fail" and "refund" in failed["reason"]


def test_run_on_sample_of_a_refused_checker_says_why():
    checker = CheckerFactory(kind="regex", settings={"pattern": "a"})
    CheckerConfig.objects.filter(pk=checker.pk).update(grants=["net:connect"])
    checker.refresh_from_db()
    with pytest.raises(TrialFailed, match="net:connect"):
        checker_trial(checker=checker, content="a")


def test_deleting_a_checker_used_by_a_panel_is_refused_naming_the_panel(admin_client_ada):
    from tests.factories import LensFactory, PanelFactory

    checker = CheckerFactory(name="gate")
    PanelFactory(name="release-gate", lenses=[LensFactory()], checkers=[checker])
    response = admin_client_ada.post(
        f"/admin/review/checkerconfig/{checker.pk}/delete/", {"post": "yes"}, follow=True
    )
    assert "release-gate" in response.content.decode()
    assert CheckerConfig.objects.filter(pk=checker.pk).exists()


def test_grants_are_asked_only_in_the_command_section(admin_client_ada):
    checker = CheckerFactory(
        name="gate", kind="constraints", settings={"mandate": 'must contain "refund"'}
    )

    page = admin_client_ada.get(change_url("checkerconfig", checker.pk)).content.decode()

    # backend_fields.js hides every section but the chosen kind's: a constraints
    # checker shows no Grants box, a command checker shows them beside its command.
    fieldsets = re.findall(r"<fieldset class=\"module aligned ([^\"]*)\".*?</fieldset>", page, re.S)
    sections = re.findall(r"<fieldset class=\"module aligned [^\"]*\".*?</fieldset>", page, re.S)
    [with_grants] = [i for i, html in enumerate(sections) if 'name="grants"' in html]
    assert fieldsets[with_grants].split() == ["show-if-kind-command"]
    assert 'name="argv"' in sections[with_grants]
    assert ">Grants<" not in page
