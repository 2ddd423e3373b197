"""The groups that grant review rights, by name: `access` reads them, the demo creates them."""

# Claim, review and decide escalations (with superusers).
REVIEWERS_GROUP = "reviewers"
# Decide escalations whose reviewers disagree.
RECONCILERS_GROUP = "reconcilers"
