"""What review tells the apps above it: Django signals, one per thing that happened.

Review never imports the apps that act on its changes (webhooks, calibration,
audit); it sends one of these, and they connect receivers in their
`AppConfig.ready()` (docs/architecture.md, "How review tells the others").

Every signal is sent with `send()`, never `send_robust()`, **inside the
transaction that makes it true**: what a receiver writes commits or rolls back
with it (an outbox row with its event, a human label with its decision, an audit
entry with its action), and a receiver's error rolls the whole of it back. What
must follow the commit (sending a webhook, waking a worker) the receiver defers
with `transaction.on_commit` itself.

Each signal's `sender` is the model class named first; the keyword arguments
and who listens are listed with it.

One more signal asks rather than tells, so it lives with its answer's shape:
`automatic_outcome_asked` (review/automatic.py), by which the final step asks
whether an outcome the panel's vote decided may stand without a person (the
guarantee answers).
"""

from django.dispatch import Signal

# -- proposals and decisions -------------------------------------------------

proposal_submitted = Signal()
"""A proposal was stored (sender `Proposal`; `proposal`), before its lenses run.

Heard by webhooks: `judgement.requested` to the clients bound to its external lenses.
"""

proposal_escalated = Signal()
"""The final step handed a proposal to people (sender `Escalation`; `escalation`):
its tally, checkers or routing said so, or the step itself kept failing.

Heard by webhooks: `proposal.escalated`. (An audit's escalation is not one: the
decision stands.)
"""

decision_preparing = Signal()
"""A decision is about to be signed (sender `Decision`; `proposal`, `prepared`).

Sent by `decision_append` before it signs and stores the decision. A receiver
reads here what it can ahead of the decision and keeps it in the dict
`prepared` under its own key; the same dict comes back with `decision_appended`.

Heard by webhooks: the endpoints `proposal.decided` will go to.
"""

decision_appended = Signal()
"""A decision was signed and entered the ledger (sender `Decision`; `decision`,
`prepared`: the dict filled at `decision_preparing`), in its transaction, once the
decision and its ledger entry (waiting for its index) are stored.

Heard by webhooks (`proposal.decided`), calibration (a reviewer's decision is
the human label each lens on the proposal is measured against; a system decision
writes none) and guarantee (a reviewer's decision on a proposal it held is a
label of its vote pattern).
"""

audit_verdict_signed = Signal()
"""A reviewer's verdict on an automatic decision was signed (sender
`DecisionAudit`; `audit`). The decision stands either way.

Heard by webhooks (`decision.disputed`, when the verdict differs), calibration
(the verdict is a human label) and guarantee (a label of the decision's vote
pattern, when it ruled on the decision).
"""

# -- escalations ---------------------------------------------------------------

escalation_claimed = Signal()
"""`user` claimed an escalation that needs one review (sender `Escalation`; `escalation`,
`user`).

Heard by webhooks (`escalation.claimed`) and audit (a claim entry).
"""

review_place_claimed = Signal()
"""`user` holds one of the places of an escalation that needs several reviews
(sender `Escalation`; `escalation`, `user`). The escalation's own state does not change.

Heard by audit (a claim entry).
"""

escalation_released = Signal()
"""`user` gave their claim back (sender `Escalation`; `escalation`, `user`).

Heard by webhooks (`escalation.released`) and audit (a release entry).
"""

escalation_reassigned = Signal()
"""Staff gave an escalation's claim to someone (sender `Escalation`; `escalation`
with its new holder, `by` the staff user, `previous` the former holder's username
or None, `note`).

Heard by webhooks (`escalation.claimed`) and audit (a reassign entry).
"""

escalation_assignment_changed = Signal()
"""The queue an escalation is in changed (sender `Escalation`; `escalation`, `by` a
user or a name such as "assignment rule", `old` and `new` as {"user": username or
None, "group": name or None}, which differ, `note`).

Heard by audit (an assign, unassign or reassign entry).
"""

review_submitted = Signal()
"""A review was given on an escalation that needs several, the last one too (sender
`Escalation`; `escalation`, `reviews`: how many it has now).

Heard by webhooks (`escalation.review_submitted`).
"""

reviews_disagreed = Signal()
"""Every review is in and they disagree: the escalation waits for a reconciler
(sender `Escalation`; `escalation`).

Heard by webhooks (`escalation.reconcile`).
"""

# -- configuration -------------------------------------------------------------

panel_priority_changed = Signal()
"""A panel's priority changed (sender `Panel`; `panel` with its new priority, `by`,
`old`).

Heard by audit (an update entry).
"""

signing_key_rotated = Signal()
"""A new server signing key took over (sender `SigningKey`; `key` the new row, `by`
a user or a name, `old_key_id` the previous key file's id or None, `retired` the ids
retired for signing, `retired_file` where the old seed went, or None).

Sent before the key files are moved, in the same transaction: if they cannot be,
nothing is recorded. Heard by audit (a rotate entry).
"""

# -- deadlines and withdrawals ---------------------------------------------------

escalation_deadline_near = Signal()
"""An escalation's review deadline is near: its `remind_at` came (sender `Escalation`;
`escalation`). Sent once per escalation, by the deadline sweep
(`services.deadlines.escalations_remind`).

Heard by notifications (`deadline_near` to whoever holds or is assigned it).
"""

escalation_deadline_passed = Signal()
"""An escalation's review deadline passed and was acted on (sender `Escalation`;
`escalation`, `decision`: the signed fallback decision, or None when its panel keeps it
open). Sent once per escalation, by `services.deadlines`; a fallback decision is also
`decision_appended` first.

Heard by webhooks (`escalation.expired`) and notifications (`deadline_passed`, keep_open
only).
"""

proposal_withdrawn = Signal()
"""Its submitter took the proposal back before it was decided (sender `Proposal`;
`proposal`, `escalation`: the escalation that waited for a person, now withdrawn, or
None). Sent by `services.withdrawals.proposal_withdraw`.

Heard by webhooks (`proposal.withdrawn`).
"""
