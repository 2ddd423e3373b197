# One command to run reviewapp, one to test it. Both create .venv on first use.
SHELL := /bin/bash
VENV := .venv
# Django 6 needs Python 3.12 or newer: take the first interpreter that is, 3.12 first
# (the version the locks are resolved for, CI's and the Docker image's).
PYTHON ?= $(shell for p in python3.12 $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) python3.13 python3.14 $(wildcard $(HOME)/.pyenv/versions/3.1[3-9]*/bin/python3) python3; do \
	"$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { command -v "$$p"; break; }; done)

.PHONY: run token test test-fast lint clean

# Exactly what CI tested: every third-party package at its pinned version and hash
# (requirements/test.txt, a pip-tools lock), then this checkout's two packages, the
# server and its client (the server verifies with its offline verifier, and it brings
# the `reviewapp-verify` command), without dependencies: `pip check` proves the lock
# holds everything they declare. Not compiled to bytecode at install (53 s -> 25 s here):
# Python compiles each module when it is first imported, and the suite imports a fraction.
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml requirements/test.txt
	@test -n "$(PYTHON)" || { echo "reviewapp needs Python 3.12 or newer (Django 6); none found on PATH." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet --no-compile --require-hashes -r requirements/test.txt
	$(VENV)/bin/pip install --quiet --no-deps --no-build-isolation -e clients/python -e ".[test]"
	$(VENV)/bin/pip check
	@touch $@

run: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} $(VENV)/bin/python manage.py rundev

# An API token for the instance `make run` serves (same settings, same var directory):
#   TOKEN=$$(make -s token NAME=my-agent SCOPES=submit,read)
# The token alone goes to standard output; on any error, nothing does.
token: $(VENV)/.installed
	@test -n "$(NAME)" -a -n "$(SCOPES)" || { echo 'usage: make -s token NAME=my-agent SCOPES=submit,read' >&2; exit 2; }
	@DEBUG=$${DEBUG:-true} $(VENV)/bin/python manage.py create_api_token "$(NAME)" --scopes "$(SCOPES)"

# The suite spreads over processes (pytest-xdist): much of it waits on workers, browsers
# and servers rather than on the CPU. Each process has its own database, var directory
# and Redis keys (tests/settings.py), so no test needs to share one with another. The
# tests that share an expensive module fixture (a browser, a `make run`, a venv: see
# `shared_by_module` in tests/conftest.py) run in one process (`--dist loadgroup`).
# Bytecode caches are written even where the environment turns them off: every test
# process, and every worker or manage.py it starts, would otherwise compile the app and
# rewrite each test module's asserts again (half of a process's collection time).
# Four on two cores: six kept both cores busier but ran no faster (default path 602–620 s
# against 630 s, PostgreSQL 794 s against 765 s, 2026-12-07).
PYTEST_WORKERS ?= 4
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadgroup

test: $(VENV)/.installed
	$(PYTEST) $(PYTEST_ARGS)

# Everything but the tests that start a Celery worker, drive Chromium or serve on a socket.
test-fast: $(VENV)/.installed
	$(PYTEST) -m "not worker and not browser and not live_server" $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check reviewapp tests benchmarks clients
	$(VENV)/bin/lint-imports --no-logo

clean:
	rm -rf var/test .pytest_cache
