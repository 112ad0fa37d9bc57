"""``python -m scaling_widgets`` is the ``scaling-widgets`` command."""

from .cli import console

raise SystemExit(console())
