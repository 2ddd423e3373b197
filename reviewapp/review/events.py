"""What review tells the apps above it: Django signals, one per thing that happened.

Review never imports the apps that act on its changes; it sends one of these
inside the transaction that makes it true, and they connect receivers in their
`AppConfig.ready()`. What must follow the commit a receiver defers itself with
`transaction.on_commit`.
"""

from django.dispatch import Signal

escalation_deadline_near = Signal()
"""An escalation's review deadline is near: its `remind_at` came (sender `Escalation`;
`escalation`). Sent once per escalation, by the deadline sweep.

Heard by notifications (`deadline_near` to whoever holds or is assigned it).
"""

escalation_deadline_passed = Signal()
"""An escalation's review deadline passed and was acted on (sender `Escalation`;
`escalation`, `decision`: the signed fallback decision, or None when its panel keeps it
open). Sent once per escalation, by `services.deadlines.escalation_expire`.

Heard by notifications (`deadline_passed`, keep_open only).
"""
