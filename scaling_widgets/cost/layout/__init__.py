"""Which layouts can run, and how one is split and placed (MODEL.md §A.3, §A.6, §A.7, §D.2, §D.3):
the checks that need more than one value (``feasible``) and what a layout that breaks one is told
(``rule_refusals``); the legal FSDP x TP splits of a slice (``split``); the split and microbatches a
layout takes when it gives none (``split_choice``, ``microbatches``, and ``fastest``: the fastest
legal one); and where the groups sit (``placement``).

Tier 6 of cost/ (``tests/test_tiers.py`` declares the order): it imports from values.py and every
tier below it, never from memory/ or evaluation/ above; ``fastest`` ranks its candidates with the
``evaluate`` it is handed."""
