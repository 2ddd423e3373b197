"""Review's signed records in the ledger: their rows checked against their entries.

The ledger orders entries and proves them, knowing only their kinds and ids;
what a decision or a piece of evidence must say, and that each is in the log
exactly once, is review's to check (``verify_ledger``, a decision's status on
its page).
"""
