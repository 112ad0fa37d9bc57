"""The ground of the cost model: how a refusal reads (``refusals``), what a field may hold
(``checks``), element-wise choice among named formulas (``choices``), and families whose members
are found by name (``registry``).

Tier 1 of cost/, the lowest (``tests/test_tiers.py`` declares the order): it imports nothing of the
package."""
