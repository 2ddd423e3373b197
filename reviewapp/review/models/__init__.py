"""The review domain as stored rows.

The database does the guarding wherever it can (one judgement per lens, one
decision per proposal, one open escalation per proposal, one ledger index per
entry), so a re-delivered task or a double click ends in an
IntegrityError instead of a duplicate.
"""

from .annotation import ClaimMark, DecisionTag, Tag, WrongReason
from .checker import CheckerConfig
from .client import AccessLoss, ApiClient
from .decision import Decision
from .decision_audit import DecisionAudit
from .endpoint_call import EndpointCall, EndpointControl
from .escalation import AssignmentRule, Escalation
from .evidence import Evidence
from .judgement import Claim, Judgement, LensFailure
from .lens import Lens
from .panel import Panel, PanelLens
from .proposal import AwaitedLens, Proposal
from .record_entry import RecordEntry
from .recorded_response import RecordedResponse
from .review import Review, ReviewClaim

__all__ = [
    "AssignmentRule",
    "AccessLoss",
    "ApiClient",
    "AwaitedLens",
    "CheckerConfig",
    "Claim",
    "ClaimMark",
    "Decision",
    "DecisionAudit",
    "DecisionTag",
    "EndpointCall",
    "EndpointControl",
    "Escalation",
    "Evidence",
    "Judgement",
    "Lens",
    "LensFailure",
    "Panel",
    "PanelLens",
    "Proposal",
    "RecordEntry",
    "RecordedResponse",
    "Review",
    "ReviewClaim",
    "Tag",
    "WrongReason",
]
