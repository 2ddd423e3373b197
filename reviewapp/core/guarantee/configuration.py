"""Which configuration a panel's evidence belongs to.

Agreement with humans is a property of the lenses as they judge now: a new
lens, a new version of one, a different `need` or a different set of checkers
changes what the machine decides, so it starts new evidence. The name,
description, audit rate, deadlines and order of the lenses change nothing the
machine decides and keep it. A proposal's configuration is read from the panel
snapshot frozen at its submission, so one judged under the old configuration
is never counted in the new one.
"""

import hashlib
import json


def configuration_key(snapshot: dict) -> str:
    """A short, stable name for the configuration a panel snapshot was judged with."""
    described = {
        "lenses": sorted([lens["id"], lens["version"]] for lens in snapshot.get("lenses", ())),
        "need": snapshot["need"],
        "checkers": sorted([c["id"], c["version"]] for c in snapshot.get("checkers", ())),
    }
    encoded = json.dumps(described, separators=(",", ":"), sort_keys=True).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]


def configuration_text(snapshot: dict) -> str:
    """For people: "lenses tone v2, facts v1; need 2; checkers schema v3"."""
    lenses = ", ".join(f"{lens['name']} v{lens['version']}" for lens in snapshot.get("lenses", ()))
    checkers = ", ".join(f"{c['name']} v{c['version']}" for c in snapshot.get("checkers", ()))
    return f"lenses {lenses}; need {snapshot['need']}; " + (
        f"checkers {checkers}" if checkers else "no checkers"
    )
