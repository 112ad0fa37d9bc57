"""The chips: a chip and the pod it sits in (``chip``), how a layout's groups sit on a TPU slice
(``mesh``) or on GPU nodes (``nodes``), and the slices of a chip near a count of chips
(``slices``).

Tier 2 of cost/, beside the registries (schedules/, strategies/, stacks/; ``tests/test_tiers.py``
declares the order): it imports from ground/ alone."""
