"""A witness's judgement of add-checkpoint requests, check by check (C2SP tlog-witness)."""

import pytest
from nacl.signing import SigningKey

from reviewapp.core import cosignature, merkle
from reviewapp.core.witness_protocol import (
    Accepted,
    Latest,
    Refused,
    judge,
    logs_by_origin,
    parse_log,
)
from tests.support.memory_log import MemoryLog

ORIGIN = "example.org/log"


@pytest.fixture
def log():
    return MemoryLog(ORIGIN, size=10)


def run(log, body, latest=None, logs=None):
    logs = logs_by_origin([parse_log(log.vkey)]) if logs is None else logs
    return judge(body, logs, lambda origin: latest.get(origin) if latest else None)


def test_a_first_checkpoint_from_zero_is_accepted(log):
    result = run(log, log.body(0))
    assert result == Accepted(ORIGIN, 10, log.tree.root(), merkle.parse_note(log.note())[0])


def test_a_consistent_extension_is_accepted(log):
    latest = {ORIGIN: Latest(4, log.tree.root(4))}
    assert isinstance(run(log, log.body(4), latest), Accepted)


def test_the_same_checkpoint_again_is_accepted(log):
    latest = {ORIGIN: Latest(10, log.tree.root())}
    assert isinstance(run(log, log.body(10), latest), Accepted)


def test_an_unknown_origin_is_404(log):
    stranger = MemoryLog("stranger.example/log", 3)
    assert run(log, stranger.body(0)).status == 404


def test_a_checkpoint_signed_by_another_key_is_403(log):
    assert run(log, log.body(0, note=log.note(key=SigningKey.generate()))).status == 403


def test_a_bad_signature_by_the_trusted_key_is_403(log):
    note = log.note().replace("\n10\n", "\n11\n", 1)
    assert run(log, log.body(0, note=note, proof=[])).status == 403


def test_a_rotated_log_key_is_trusted_beside_the_old_one(log):
    old_key = log.vkey
    log.key = SigningKey.generate()
    logs = logs_by_origin([parse_log(old_key), parse_log(f"{ORIGIN} {log.vkey}")])
    assert isinstance(run(log, log.body(0), logs=logs), Accepted)


def test_an_old_size_beyond_the_checkpoint_is_400(log):
    body = cosignature.add_checkpoint_body(11, [], log.note())
    assert run(log, body).status == 400


def test_a_malformed_body_is_400(log):
    assert run(log, b"old 0\n\nnot a note\n").status == 400


def test_an_old_size_other_than_the_latest_is_409_naming_it(log):
    latest = {ORIGIN: Latest(6, log.tree.root(6))}
    refused = Refused(409, "old size 4 is not the latest cosigned size", 6)
    assert run(log, log.body(4), latest) == refused
    assert run(log, log.body(0), latest).latest_size == 6


def test_a_stale_checkpoint_is_409(log):
    latest = {ORIGIN: Latest(10, log.tree.root())}
    stale = log.body(4, size=6)
    assert run(log, stale, latest).latest_size == 10


def test_the_same_size_with_another_root_is_409(log):
    fork = MemoryLog(ORIGIN, size=10, history="fork")
    fork.key = log.key
    latest = {ORIGIN: Latest(10, log.tree.root())}
    result = run(log, fork.body(10), latest)
    assert (result.status, result.latest_size) == (409, 10)


def test_a_forked_extension_fails_its_consistency_proof_with_422(log):
    fork = MemoryLog(ORIGIN, size=12, history="fork")
    fork.key = log.key
    latest = {ORIGIN: Latest(10, log.tree.root())}
    assert run(log, fork.body(10), latest).status == 422


def test_a_proof_from_zero_must_be_empty(log):
    body = log.body(0, proof=[bytes(32)])
    assert run(log, body).status == 422
