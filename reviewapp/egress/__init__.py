"""Outbound HTTP to addresses the operator allows: the pinned-address client and its deadline,
which webhooks, notifications and ledger witnesses send through."""
