"""The search over layouts: every legal layout of a cluster, evaluated and ranked (``plan``, over
the arrays ``layouts`` builds), and the strategy map, the best layout at each global batch and count
of chips (``strategy_map``, on the axes of ``map_axes``).

Tier 9 of cost/, the top, beside views/, calibrate.py and compare.py (``tests/test_tiers.py``
declares the order): it imports from evaluation/ and every tier below; only cost/__init__.py sits
above it."""
