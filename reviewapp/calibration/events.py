"""What calibration tells the apps above it (the way review/events.py does for review)."""

from django.dispatch import Signal

lens_drift_crossed = Signal()
"""A lens's rolling agreement with the reviewers crossed its floor (sender `LensFloor`;
`floor` with its lens, `drifted`: True when it fell below, False when it came back,
`kappa`, `adjudications`). Sent inside the transaction that records the crossing, once
per crossing (`services.drift_evaluate`).

Heard by notifications (`drift`, for admins).
"""
