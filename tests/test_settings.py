import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load_settings(then: str = "", **env) -> subprocess.CompletedProcess:
    """Set Django up in a fresh process with exactly `env`, then run the code `then`."""
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {then}"],
        cwd=ROOT,
        env={
            "PATH": os.environ["PATH"],
            # Code, not settings: where the client package is (see conftest).
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "DJANGO_SETTINGS_MODULE": "reviewapp.settings",
            "REVIEWAPP_VAR_DIR": str(ROOT / "var" / "test"),
            "DEBUG": "true",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_malformed_database_url_is_refused_with_a_clear_message():
    result = _load_settings(DATABASE_URL="not a url at all")
    assert result.returncode != 0
    assert "DATABASE_URL 'not a url at all' is not a usable database URL" in result.stderr
    assert "postgres://USER:PASSWORD@HOST:5432/NAME" in result.stderr


def test_production_refuses_to_start_without_a_secret_key():
    result = _load_settings(DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_an_unparseable_boolean_is_refused_naming_the_variable():
    result = _load_settings(DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG" in result.stderr


def test_an_unsupported_broker_is_refused():
    result = _load_settings(CELERY_BROKER_URL="amqp://guest@localhost//")
    assert result.returncode != 0
    assert "CELERY_BROKER_URL" in result.stderr


def test_valid_settings_load():
    result = _load_settings()
    assert result.returncode == 0, result.stderr


POSTGRES_URL = "postgres://app@db.example:5432/reviewapp"


def _server_side_binding(**env) -> str:
    result = _load_settings(
        "from django.conf import settings; "
        "print(settings.DATABASES['default'].get('OPTIONS', {}).get('server_side_binding'))",
        DATABASE_URL=POSTGRES_URL,
        **env,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_postgresql_prepares_statements_unless_told_not_to():
    assert _server_side_binding() == "True"
    assert _server_side_binding(DATABASE_PREPARED_STATEMENTS="false") == "None"


def test_an_unparseable_prepared_statements_flag_is_refused():
    result = _load_settings(DATABASE_URL=POSTGRES_URL, DATABASE_PREPARED_STATEMENTS="sometimes")
    assert result.returncode != 0
    assert "DATABASE_PREPARED_STATEMENTS" in result.stderr


def test_an_api_key_allowlist_entry_that_is_no_name_is_refused():
    result = _load_settings(REVIEWAPP_LLM_KEY_ENV_ALLOW="LLM_API_KEY*,*")
    assert result.returncode != 0
    assert "REVIEWAPP_LLM_KEY_ENV_ALLOW: '*' is neither a variable name nor a prefix" in (
        result.stderr
    )


# What the web server, `make run` and the worker run before they serve (reviewapp/startup.py).
START = "from reviewapp.startup import refuse_unless_ready; refuse_unless_ready(serves_pages=False)"


def test_an_unknown_checker_sandbox_user_stops_the_start():
    result = _load_settings(START, REVIEWAPP_CHECKER_USER="no-such-user-here")
    assert result.returncode != 0
    assert "REVIEWAPP_CHECKER_USER: no user 'no-such-user-here'" in result.stderr


def test_root_as_the_checker_sandbox_user_stops_the_start():
    result = _load_settings(START, REVIEWAPP_CHECKER_USER="root")
    assert result.returncode != 0
    assert "REVIEWAPP_CHECKER_USER must not be root" in result.stderr


def test_the_default_checker_user_passes_the_start():
    result = _load_settings(START)
    assert result.returncode == 0, result.stderr


def test_reading_the_settings_touches_nothing_on_disk(tmp_path):
    var = tmp_path / "var"
    result = subprocess.run(
        [sys.executable, "-c", "import reviewapp.settings as s; print(s.VAR_DIR)"],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
             "REVIEWAPP_VAR_DIR": str(var), "DEBUG": "true",
             # A user no machine has: only a start-up check may look it up.
             "REVIEWAPP_CHECKER_USER": "no-such-user-here"},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(var)
    assert not var.exists()


def test_setting_django_up_makes_the_var_directory(tmp_path):
    var = tmp_path / "var"
    result = _load_settings(REVIEWAPP_VAR_DIR=str(var))
    assert result.returncode == 0, result.stderr
    assert (var / "staticfiles").is_dir()


def test_a_sweep_attempts_setting_that_is_not_a_positive_number_is_refused():
    for bad in ("0", "-1", "three"):
        result = _load_settings(REVIEWAPP_SWEEP_ATTEMPTS=bad)
        assert result.returncode != 0, bad
        assert "REVIEWAPP_SWEEP_ATTEMPTS" in result.stderr


def test_the_ledger_is_checkpointed_every_30_seconds_by_default():
    """The interval bounds how long a decision sits after the latest signed checkpoint,
    where deleting it leaves no trace (README: "What the checkpoint interval bounds")."""
    result = _load_settings(
        "from django.conf import settings; "
        "print(settings.REVIEWAPP_LEDGER_CHECKPOINT_EVERY_SECONDS, "
        "settings.CELERY_BEAT_SCHEDULE['ledger-checkpoint']['schedule'])"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["30.0", "30.0"]


def test_an_llm_allow_list_entry_that_is_no_network_is_refused():
    result = _load_settings(REVIEWAPP_LLM_ALLOWED_NETWORKS="10.0.0.0/8,not-a-network")
    assert result.returncode != 0
    assert "REVIEWAPP_LLM_ALLOWED_NETWORKS" in result.stderr and "not-a-network" in result.stderr


def test_production_refuses_the_placeholder_secret_key_of_env_example():
    placeholder = next(
        line.split("=", 1)[1]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line.startswith("SECRET_KEY=")
    )
    result = _load_settings(DEBUG="false", SECRET_KEY=placeholder)
    assert result.returncode != 0
    assert "SECRET_KEY is a placeholder or too weak" in result.stderr


def test_production_refuses_a_short_secret_key():
    result = _load_settings(DEBUG="false", SECRET_KEY="s3cr3t-but-short")
    assert result.returncode != 0
    assert "50 or more characters" in result.stderr


def test_debug_accepts_any_secret_key():
    assert _load_settings(SECRET_KEY="short").returncode == 0


def test_a_malformed_ledger_witness_line_is_refused_naming_the_line():
    result = _load_settings(
        REVIEWAPP_LEDGER_WITNESSES="# ours\nw.example/w+00000000+AAAA https://w.example/\n"
    )
    assert result.returncode != 0
    assert "REVIEWAPP_LEDGER_WITNESSES: line 2: verifier key w.example/w" in result.stderr


def test_a_ledger_witness_quorum_beyond_the_witnesses_is_refused():
    result = _load_settings(REVIEWAPP_LEDGER_WITNESS_QUORUM="1")
    assert result.returncode != 0
    assert "REVIEWAPP_LEDGER_WITNESS_QUORUM is 1, but REVIEWAPP_LEDGER_WITNESSES lists 0" in (
        result.stderr
    )


def test_ledger_witnesses_load_as_vkey_and_url_pairs():
    vkey = "w.example/w+7fac91ce+BAOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
    result = _load_settings(
        "from django.conf import settings; print(settings.REVIEWAPP_LEDGER_WITNESSES)",
        REVIEWAPP_LEDGER_WITNESSES=f"{vkey} https://w.example/submit/\n",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr([(vkey, "https://w.example/submit")])


def test_a_poll_interval_under_a_second_is_refused_naming_the_variable():
    result = _load_settings(REVIEWAPP_INBOX_POLL_SECONDS="0")
    assert result.returncode != 0
    assert "REVIEWAPP_INBOX_POLL_SECONDS must be 1 or more (seconds)." in result.stderr


def test_the_poll_intervals_default_to_five_and_two_seconds():
    shown = "from django.conf import settings as s; "
    shown += "print(s.REVIEWAPP_INBOX_POLL_SECONDS, s.REVIEWAPP_PROGRESS_POLL_SECONDS)"
    result = _load_settings(shown)
    assert result.stdout.split() == ["5", "2"], result.stderr


def test_production_sends_mail_over_smtp_even_without_an_email_host():
    result = _load_settings(
        "from django.conf import settings; print(settings.MAILERS['default']['BACKEND'])",
        DEBUG="false",
        SECRET_KEY="a-production-secret-key-long-enough-to-pass-the-check-0123456789",
    )
    assert result.stdout.strip() == "django.core.mail.backends.smtp.EmailBackend", result.stderr


def test_the_one_command_run_writes_mail_to_files():
    result = _load_settings(
        "from django.conf import settings; print(settings.MAILERS['default']['BACKEND'])"
    )
    assert result.stdout.strip() == "django.core.mail.backends.filebased.EmailBackend"


def test_a_digest_minute_outside_one_to_sixty_seconds_is_refused_naming_the_variable():
    result = _load_settings(REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS="0")
    assert result.returncode != 0
    assert "REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS must be 1 to 60." in result.stderr


def test_a_digest_minute_that_is_no_whole_number_of_seconds_is_refused_naming_the_variable():
    result = _load_settings(REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS="0.5")
    assert result.returncode != 0
    assert "REVIEWAPP_NOTIFY_DIGEST_MINUTE_SECONDS" in result.stderr
