"""Escalate with a guarantee: a panel decides alone only where humans have shown it agrees.

- `patterns`: a decision's vote pattern, the patterns a configuration can decide, their order;
- `bound`: the anytime-valid lower confidence bound on a pattern's agreement with humans
  (`special`: the one special function it needs);
- `sequence`: which patterns are trusted together (fixed-sequence testing), and the
  agreement of all automatic decisions;
- `focus`: spending the audit budget where the bound is closest to the target;
- `configuration`: which configuration a panel's evidence belongs to.
"""
