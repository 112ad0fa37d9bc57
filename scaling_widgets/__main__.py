"""``python -m scaling_widgets`` is the ``scaling-widgets`` command."""

from .cli import main

raise SystemExit(main())
