"""`reviewapp-verify`: exports and API decisions verified with nothing but public keys."""

import base64
import io
import json
import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from nacl.signing import SigningKey
from reviewapp_client.verify import cli

from reviewapp.core import merkle
from reviewapp.core.signing import Signer, canonical_json
from reviewapp.ledger import services
from reviewapp.ledger.keys import forget_cached_signer, server_signer, trusted_keys
from reviewapp.ledger.models import LedgerEntry
from reviewapp.review.in_ledger.status import ledger_position_for_decision
from reviewapp.review.models import Decision
from tests.ledger.helpers import (
    decide,
    decide_chained_v1,
    export,
    public_key_b64,
    read_jsonl,
    run_offline_verifier,
    write_jsonl,
)

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = cli.main([str(a) for a in args])
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def fails(path, *extra, match: str) -> str:
    code, out, err = run(path, "--public-key", public_key_b64(), *extra)
    assert code == 1, out + err
    assert err.startswith("FAIL "), err
    import re

    assert re.search(match, err), err
    return err


@pytest.fixture
def exported(tmp_path):
    decide(3)  # lines: header, e0, d0, e1, d1, e2, d2, checkpoint
    return export(tmp_path)


def decision_lines(objects):
    return [i for i, o in enumerate(objects) if o.get("kind") == "decision"]


# ── ledger exports ───────────────────────────────────────────────────────────


def test_an_untouched_export_verifies(exported):
    code, out, err = run(exported, "--public-key", public_key_b64())
    assert code == 0, err
    assert out.startswith("OK: 6 ledger entries (3 decisions, 3 evidence)")
    assert "1 signed checkpoint(s) match the recomputed tree" in out
    assert f"root at size 6 is {services.root_at(6).hex()}" in out
    assert err == ""


def test_the_export_layout(exported):
    objects = read_jsonl(exported)
    header, entries, checkpoint = objects[0], objects[1:-1], objects[-1]
    assert header["format"] == "reviewapp.ledger-export/2"
    assert (header["start"], header["tree_size"], header["frontier"]) == (0, 6, [])
    # Every trusted key, the server's own among them (a reused var dir may hold retired ones).
    assert header["keys"] == [
        {"key_id": key_id, "public_key": base64.b64encode(key).decode()}
        for key_id, key in sorted(trusted_keys().items())
    ]
    assert {"key_id": server_signer().key_id, "public_key": public_key_b64()} in header["keys"]
    assert [e["index"] for e in entries] == list(range(6))
    assert set(entries[0]) == {"index", "kind", "payload", "signature", "key_id", "leaf_hash"}
    assert checkpoint["tree_size"] == 6 and checkpoint["checkpoint"].startswith(
        "reviewapp.local/ledger\n6\n"
    )


def test_the_command_writes_the_same_export(exported, tmp_path):
    out = io.StringIO()
    call_command("export_decisions", stdout=out)
    assert out.getvalue() == exported.read_text()
    path = tmp_path / "cmd.jsonl"
    call_command("export_decisions", "--output", str(path), stderr=io.StringIO())
    assert path.read_text() == exported.read_text()


def test_an_edited_outcome_fails_at_its_line(exported):
    objects = read_jsonl(exported)
    line = decision_lines(objects)[1]
    objects[line]["payload"] = objects[line]["payload"].replace(
        '"outcome":"approved"', '"outcome":"rejected"'
    )
    fails(
        write_jsonl(exported, objects),
        match=rf"^FAIL line {line + 1} \(entry 3, decision for proposal \d+\): "
        r"signature does not verify",
    )


def test_an_edited_rationale_fails_at_its_line(exported):
    objects = read_jsonl(exported)
    line = decision_lines(objects)[2]
    payload = json.loads(objects[line]["payload"])
    payload["rationale"] = "Looked fine to me."
    objects[line]["payload"] = canonical_json(payload).decode()
    fails(
        write_jsonl(exported, objects),
        match=rf"^FAIL line {line + 1} \(entry 5.*signature does not verify",
    )


def test_a_swapped_signature_fails_at_its_line(exported):
    objects = read_jsonl(exported)
    a, b = decision_lines(objects)[:2]
    objects[a]["signature"], objects[b]["signature"] = (
        objects[b]["signature"],
        objects[a]["signature"],
    )
    fails(
        write_jsonl(exported, objects),
        match=rf"^FAIL line {a + 1} \(entry 1.*signature does not verify",
    )


def test_a_leaf_hash_that_does_not_match_is_named(exported):
    objects = read_jsonl(exported)
    objects[2]["leaf_hash"] = "00" * 32
    fails(
        write_jsonl(exported, objects),
        match=r"^FAIL line 3 \(entry 1.*stored leaf hash does not match",
    )


def test_a_deleted_entry_is_named(exported):
    objects = read_jsonl(exported)
    del objects[3]
    fails(
        write_jsonl(exported, objects),
        match=r"^FAIL line 4 \(entry 3.*entry 2 is missing \(found entry 3 next\)",
    )


def test_a_deleted_and_renumbered_entry_is_caught(exported):
    objects = read_jsonl(exported)
    del objects[2]  # decision 0
    for obj in objects[2:-1]:
        obj["index"] -= 1
    # Signed alone, the decisions after it name no predecessor: the checkpoint catches it.
    fails(
        write_jsonl(exported, objects),
        match=r"^FAIL line 7 \(checkpoint\): checkpoint for size 6, but the export ends at size 5",
    )


def test_a_deleted_and_renumbered_decision_signed_before_v2_breaks_its_chain(tmp_path):
    decide_chained_v1(3)
    objects = read_jsonl(export(tmp_path))
    del objects[2]  # the second chained decision
    objects[2]["index"] -= 1
    fails(
        write_jsonl(tmp_path / "export.jsonl", objects),
        match=r"^FAIL line 3 \(entry 1, decision for .*decision chain broken",
    )


def test_a_decision_twice_in_an_export_is_caught(tmp_path):
    decide(2)
    objects = read_jsonl(export(tmp_path, checkpoint=False))
    objects.append({**objects[2], "index": len(objects) - 1})  # decision 0 again, at the end
    fails(
        write_jsonl(tmp_path / "export.jsonl", objects),
        "--no-checkpoint",
        match=r"^FAIL line 6 \(entry 4, decision for .*in the log twice: it is entry 1 too",
    )


def test_decisions_signed_before_and_after_v2_verify_side_by_side_offline(tmp_path):
    decide_chained_v1(2)
    decide(2)
    decide_chained_v1(1)  # a chained decision after v2 ones still follows the last chained
    code, out, err = run(export(tmp_path), "--public-key", public_key_b64())
    assert code == 0, err
    assert out.startswith("OK: 7 ledger entries (5 decisions, 2 evidence)")


def test_a_truncated_export_is_caught_by_its_checkpoint(exported):
    objects = read_jsonl(exported)
    del objects[-2]  # the last decision; the checkpoint line stays
    fails(
        write_jsonl(exported, objects),
        match=r"checkpoint for size 6, but the export ends at size 5",
    )


def test_reordered_entries_are_named(exported):
    objects = read_jsonl(exported)
    objects[2], objects[4] = objects[4], objects[2]
    fails(write_jsonl(exported, objects), match=r"^FAIL line 3 \(entry 3.*entry 1 is missing")


def test_reordered_and_renumbered_entries_are_caught(exported):
    objects = read_jsonl(exported)
    objects[1], objects[3] = objects[3], objects[1]  # two evidence entries: no chain to break
    objects[1]["index"], objects[3]["index"] = 0, 2
    # The first decision's own evidence now comes after it.
    fails(
        write_jsonl(exported, objects),
        match=r"^FAIL line 3 \(entry 1, decision .*signed evidence from .* is not in the ledger "
        r"before it",
    )


def test_a_forged_checkpoint_is_rejected(exported):
    objects = read_jsonl(exported)
    note = objects[-1]["checkpoint"]
    lines = note.split("\n")
    lines[2] = base64.b64encode(merkle.EMPTY_ROOT).decode()
    objects[-1]["checkpoint"] = "\n".join(lines)
    fails(
        write_jsonl(exported, objects),
        match=r"^FAIL line 8 \(checkpoint\): checkpoint rejected: "
        r"the signature by reviewapp.local/ledger does not verify",
    )


def test_a_checkpoint_signed_by_an_untrusted_key_is_rejected(exported):
    impostor = SigningKey.generate()
    objects = read_jsonl(exported)
    forged = merkle.Checkpoint("reviewapp.local/ledger", 6, services.root_at(6))
    objects[-1]["checkpoint"] = merkle.sign_checkpoint(
        forged, bytes(impostor.verify_key), lambda b: impostor.sign(b).signature
    )
    fails(write_jsonl(exported, objects), match=r"not signed by any trusted key")


def test_the_wrong_public_key_is_named(exported):
    other = base64.b64encode(bytes(SigningKey.generate().verify_key)).decode()
    code, _, err = run(exported, "--public-key", other)
    assert code == 1
    assert err.startswith("FAIL line 2 (entry 0, evidence from checker-")
    assert f"signed by key {server_signer().key_id}, which is not a trusted public key" in err


def test_inclusion_in_a_given_checkpoint(exported, tmp_path):
    checkpoint = services.latest_checkpoint()
    as_text = tmp_path / "checkpoint.txt"
    as_text.write_text(checkpoint.note)
    as_json = tmp_path / "checkpoint.json"
    as_json.write_text(json.dumps(services.checkpoint_json(checkpoint)))
    for path in (as_text, as_json):
        code, out, err = run(exported, "--public-key", public_key_b64(), "--checkpoint", path)
        assert code == 0, err
        assert "2 signed checkpoint(s) match" in out
    # A checkpoint at an earlier size is checked where the tree had that size.
    decide(1)
    bigger = export(tmp_path, "bigger.jsonl")
    code, out, err = run(bigger, "--public-key", public_key_b64(), "--checkpoint", as_text)
    assert code == 0, err
    # And one the export does not reach is an error, not a pass.
    services.checkpoint_create()
    decide(1)
    latest = tmp_path / "latest.txt"
    latest.write_text(services.checkpoint_create().note)
    fails(
        exported,
        "--checkpoint",
        latest,
        match=r"checkpoint for size 10, but the export ends at size 6",
    )


def test_a_checkpoint_from_a_different_history_is_caught(exported, tmp_path):
    signer = server_signer()
    other = merkle.Checkpoint("reviewapp.local/ledger", 4, merkle.EMPTY_ROOT)
    path = tmp_path / "other.txt"
    path.write_text(merkle.sign_checkpoint(other, signer.public_key, signer.sign_bytes))
    fails(
        exported,
        "--checkpoint",
        path,
        match=r"checkpoint for size 4 has root e3b0c442.*the entries give",
    )


def test_a_partial_export_continues_from_its_frontier(tmp_path):
    decide(3)
    services.checkpoint_create()
    partial = export(tmp_path, after=2)
    objects = read_jsonl(partial)
    assert objects[0]["start"] == 3 and len(objects[0]["frontier"]) == 2
    code, out, err = run(partial, "--public-key", public_key_b64())
    assert code == 0, err
    assert "OK: 6 ledger entries (2 decisions, 1 evidence)" in out
    assert "partial export from entry 3" in err
    objects[0]["frontier"][0] = "00" * 32
    fails(write_jsonl(partial, objects), match=r"checkpoint for size 6 has root")


def test_rotated_keys_need_every_public_key(tmp_path, settings):
    decide(1)
    first_key = public_key_b64()
    rotated = Signer.generate()
    settings.REVIEWAPP_SIGNING_KEY = base64.b64encode(_seed(rotated)).decode()
    forget_cached_signer()
    try:
        decide(1)
        second_key = server_signer().public_key_b64
        path = export(tmp_path)
    finally:
        forget_cached_signer()
    code, _, err = run(path, "--public-key", first_key)
    assert code == 1 and f"signed by key {rotated.key_id}" in err
    code, out, err = run(path, "--public-key", first_key, "--public-key", second_key)
    assert code == 0, err
    key_file = tmp_path / "second.pub"
    key_file.write_text(second_key + "\n")
    code, out, err = run(path, "--public-key", first_key, "--public-key", key_file)
    assert code == 0, err
    # Every key in one file, as `manage.py ledger_keys` writes it (the key from before
    # the switch to REVIEWAPP_SIGNING_KEY is anchored, as the README says to) ...
    settings.REVIEWAPP_TRUSTED_KEYS = [first_key]
    listing = io.StringIO()
    call_command("ledger_keys", stdout=listing)
    assert [line.split()[0] for line in listing.getvalue().splitlines()] == [first_key, second_key]
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text("# reviewapp signing keys\n" + listing.getvalue())
    code, out, err = run(path, "--public-key", keys_file)
    assert code == 0, err
    # ... or as GET /api/keys answers.
    api_keys = tmp_path / "keys.json"
    api_keys.write_text(
        json.dumps([{"key_id": "a", "public_key": k} for k in (first_key, second_key)])
    )
    code, out, err = run(path, "--public-key", api_keys)
    assert code == 0, err


def test_a_saved_error_answer_as_the_key_file_is_named_for_what_it_is(exported, tmp_path):
    saved = tmp_path / "keys.json"
    saved.write_text('{"detail": "Unauthorized"}')

    result = run_offline_verifier(exported, "--public-key", saved)

    assert result.returncode == 2
    assert "holds an API error ('Unauthorized'), not keys" in result.stderr
    assert "GET /api/keys (public, no token needed)" in result.stderr


def _seed(signer: Signer) -> bytes:
    return bytes(signer._signing_key)


def test_worker_processes_report_the_same_first_bad_line(exported):
    objects = read_jsonl(exported)
    objects[4]["signature"] = objects[6]["signature"]
    path = write_jsonl(exported, objects)
    serial = fails(path, "--workers", "1", match="signature does not verify")
    parallel = fails(path, "--workers", "2", match="signature does not verify")
    assert serial == parallel and serial.startswith("FAIL line 5 (entry 3")


def test_garbage_is_named_not_crashed_on(tmp_path, exported):
    lines = exported.read_text().splitlines()
    lines[3] = "{not json"
    path = tmp_path / "garbage.jsonl"
    path.write_text("\n".join(lines) + "\n")
    fails(path, match=r"^FAIL line 4: not JSON")
    path.write_text("")
    fails(path, match=r"empty file")
    path.write_text('{"hello": "world"}\n')
    fails(path, match=r"neither a ledger export nor decisions")
    with pytest.raises(SystemExit) as exit_:
        run(exported, "--public-key", "not a key")
    assert exit_.value.code == 2


# ── decisions as the API serves them ────────────────────────────────────────


def api_decisions(tmp_path, name="decisions.jsonl"):
    """What GET /api/decisions serves, one object per line."""
    public = public_key_b64()
    objects = [
        {
            "id": d.pk,
            "proposal": d.proposal_id,
            "outcome": d.outcome,
            "basis": d.basis,
            "decided_by": d.decided_by_name,
            "rationale": d.rationale,
            "payload": d.payload,
            "signature": d.signature,
            "key_id": d.key_id,
            "public_key": public,
            "prev_hash": d.prev_hash,
            "hash": d.hash,
        }
        for d in Decision.objects.order_by("pk")
    ]
    return write_jsonl(tmp_path / name, objects), objects


def test_api_decisions_verify(tmp_path):
    decide(3)
    path, _ = api_decisions(tmp_path)
    code, out, err = run(path, "--public-key", public_key_b64())
    assert code == 0, err
    assert out.startswith(
        "OK: 3 decisions: signatures, hashes, each decision once and the v1 decisions' chain "
        "verified"
    )


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("outcome", "rejected", "differs from its signed bytes in outcome"),
        ("rationale", "Edited later.", "differs from its signed bytes in rationale"),
        ("hash", "ab" * 32, "hash is not the SHA-256 of the signed bytes"),
    ],
)
def test_an_edited_api_decision_is_named(tmp_path, field, value, problem):
    decide(3)
    path, objects = api_decisions(tmp_path)
    objects[1][field] = value
    fails(
        write_jsonl(path, objects),
        match=rf"^FAIL line 2 \(decision {objects[1]['id']}, proposal \d+\): {problem}",
    )


def test_swapped_deleted_and_reordered_api_decisions_are_named(tmp_path):
    decide(3)
    path, objects = api_decisions(tmp_path)
    swapped = [dict(o) for o in objects]
    swapped[0]["signature"] = objects[1]["signature"]
    fails(write_jsonl(path, swapped), match=r"^FAIL line 1 .*signature does not verify")
    fails(
        write_jsonl(path, [objects[0], objects[1], objects[0]]),
        match=r"^FAIL line 3 .*given twice: on line 1 too",
    )


def test_deleted_and_reordered_api_decisions_signed_before_v2_break_their_chain(tmp_path):
    decide_chained_v1(3)
    decide(1)
    path, objects = api_decisions(tmp_path)
    fails(write_jsonl(path, [objects[0], objects[2]]), match=r"^FAIL line 2 .*hash chain broken")
    fails(
        write_jsonl(path, [objects[1], objects[0], objects[2], objects[3]]),
        match=r"^FAIL line 2 .*hash chain broken",
    )
    code, out, err = run(write_jsonl(path, objects), "--public-key", public_key_b64())
    assert code == 0 and out.startswith("OK: 4 decisions"), err


def test_api_decisions_included_in_a_checkpoint(tmp_path, client):
    decide(3)
    checkpoint = services.checkpoint_create()
    path, objects = api_decisions(tmp_path)
    cp_file = tmp_path / "checkpoint.txt"
    cp_file.write_text(checkpoint.note)
    proofs = []
    for obj in objects:
        index = ledger_position_for_decision(Decision.objects.get(pk=obj["id"]))
        entry = LedgerEntry.objects.get(leaf_index=index)
        proofs.append(
            {
                "index": index,
                "tree_size": checkpoint.tree_size,
                "leaf_hash": entry.leaf_hash,
                "proof": [h.hex() for h in services.inclusion_proof(index, checkpoint.tree_size)],
            }
        )
    proofs_file = write_jsonl(tmp_path / "proofs.jsonl", proofs)
    code, out, err = run(
        path, "--public-key", public_key_b64(), "--checkpoint", cp_file, "--proofs", proofs_file
    )
    assert code == 0, err
    assert "every decision's inclusion in the checkpoint verified" in out
    fails(path, "--checkpoint", cp_file, match=r"^FAIL line 1 .*no inclusion proof")
    proofs[1]["proof"][0] = "00" * 32
    write_jsonl(proofs_file, proofs)
    fails(
        path,
        "--checkpoint",
        cp_file,
        "--proofs",
        proofs_file,
        match=r"^FAIL line 2 .*does not verify against the checkpoint",
    )


# ── runs without Django ──────────────────────────────────────────────────────


def test_the_command_runs_without_django_or_the_server(exported):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    elsewhere = exported.parent  # not the repository: the server's package is not on the path
    result = run_offline_verifier(
        exported, "--public-key", public_key_b64(), env=env, cwd=elsewhere, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("OK: 6 ledger entries")
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, reviewapp_client.verify.cli; "
            "assert not [m for m in sys.modules if m.split('.')[0] in "
            "('django', 'celery', 'reviewapp')], sorted(sys.modules)",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    stranger = base64.b64encode(bytes(SigningKey.generate().verify_key)).decode()
    bad = run_offline_verifier(
        exported, "--public-key", stranger, env=env, cwd=elsewhere, timeout=60
    )
    assert bad.returncode == 1 and bad.stderr.startswith("FAIL line 2 (entry 0, ")


def test_api_pages_saved_as_they_came_verify(tmp_path):
    """`curl /api/decisions?after=…` pages appended to one file, one page per line."""
    decide(3)
    _, objects = api_decisions(tmp_path)
    pages = [
        {"items": objects[:2], "next_after": objects[1]["id"]},
        {"items": objects[2:], "next_after": None},
    ]
    path = write_jsonl(tmp_path / "pages.jsonl", pages)
    code, out, err = run(path, "--public-key", public_key_b64())
    assert code == 0, err
    assert out.startswith("OK: 3 decisions")
    pages[1]["items"][0]["outcome"] = "rejected"
    fails(write_jsonl(path, pages), match=r"^FAIL line 2, item 1 \(decision .*in outcome")


def _subprocess_verify(path) -> subprocess.CompletedProcess:
    """In a real process: a RecursionError there would print a traceback."""
    return run_offline_verifier(path, "--public-key", public_key_b64())


def test_a_deeply_nested_payload_is_a_clean_failure_line(exported):
    objects = read_jsonl(exported)
    objects[2]["payload"] = "[" * 100_000 + "]" * 100_000
    result = _subprocess_verify(write_jsonl(exported, objects))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr
    assert result.stderr.splitlines() == [
        "FAIL line 3 (entry 1): signed bytes are JSON nested too deeply to check"
    ]


def test_a_deeply_nested_line_is_a_clean_failure_line(exported):
    lines = exported.read_text().splitlines(keepends=True)
    lines.insert(2, '{"index":' * 100_000 + "0" + "}" * 100_000 + "\n")
    exported.write_text("".join(lines))
    result = _subprocess_verify(exported)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines() == ["FAIL line 3: not JSON (nested too deeply to check)"]
