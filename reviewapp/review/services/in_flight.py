"""What proposals still in flight need: the lenses and checkers their snapshots name.

A proposal is judged with the configuration frozen at submission, so deleting a
lens or checker it names would leave it unable to finish as configured. The
admin refuses such deletes; if a row is gone anyway (deleted in the database),
the final step escalates the proposal naming it.
"""

from ..models import CheckerConfig, Lens, Proposal

_IN_FLIGHT = (Proposal.Status.QUEUED, Proposal.Status.EVALUATING)


def _needed(kind: str, ids) -> dict[int, list[int]]:
    """{id: [proposal ids]} for each given lens/checker id that an unfinished snapshot names."""
    wanted = set(ids)
    needed: dict[int, list[int]] = {}
    # In-flight proposals are few (the pipeline drains them); the snapshot is
    # the truth of what each one needs, so it is read rather than the panel.
    for pk, snapshot in (
        Proposal.objects.filter(status__in=_IN_FLIGHT)
        .order_by("pk")
        .values_list("pk", "panel_snapshot")
    ):
        for entry in snapshot.get(kind, []):
            if entry["id"] in wanted:
                needed.setdefault(entry["id"], []).append(pk)
    return needed


def lenses_needed(lenses) -> dict[int, list[int]]:
    return _needed("lenses", [lens.pk for lens in lenses])


def checkers_needed(checkers) -> dict[int, list[int]]:
    return _needed("checkers", [checker.pk for checker in checkers])


def in_flight_refusals(objs, needed: dict[int, list[int]], noun: str) -> list[str]:
    """One sentence per object that unfinished proposals still need, naming them."""
    problems = []
    for obj in objs:
        if obj.pk in needed:
            ids = needed[obj.pk]
            shown = ", ".join(f"#{pk}" for pk in ids[:10]) + (" …" if len(ids) > 10 else "")
            problems.append(
                f"{noun} {obj.name!r} is still needed by {len(ids)} unfinished "
                f"proposal(s) ({shown})"
            )
    return problems


def gone_from_snapshot(snapshot: dict) -> tuple[list[str], list[str]]:
    """(lens names, checker names) the snapshot names whose rows no longer exist."""
    lens_ids = [e["id"] for e in snapshot["lenses"]]
    checker_ids = [e["id"] for e in snapshot["checkers"]]
    lenses = set(Lens.objects.filter(pk__in=lens_ids).values_list("pk", flat=True))
    checkers = set(CheckerConfig.objects.filter(pk__in=checker_ids).values_list("pk", flat=True))
    return (
        [e["name"] for e in snapshot["lenses"] if e["id"] not in lenses],
        [e["name"] for e in snapshot["checkers"] if e["id"] not in checkers],
    )
