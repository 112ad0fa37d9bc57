"""The transformer: its shape, its parameters and FLOPs, one layer's compute and traffic under
each strategy and where it turns compute-bound, its experts, context parallelism, and the
activations it keeps.

Tier 3 of cost/ (``tests/test_tiers.py`` declares the order): it imports from ground/, hardware/ and
the registries (schedules/, strategies/, stacks/). Its formulas take arrays and the model's shape,
never the four values (``values.py``, above it)."""
