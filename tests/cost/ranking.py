"""What a plan's order must be (docs/MODEL.md §C): first the layouts that tie the fastest, the one
that keeps more of its headroom first; then the rest, the faster first."""

import numpy as np


def assert_plan_order(ranked) -> None:
    """Fail unless ``ranked`` (a ``Plan``) is in its promised order."""
    steps = ranked.step_time[ranked.order]
    margins, tied = ranked.margin[ranked.order], ranked.tied[ranked.order]
    head = ranked.ties
    assert tied[:head].all() and not tied[head:].any()  # the tie is the head
    fastest = steps.min()
    assert np.all(steps[:head] <= ranked.band * fastest)
    assert np.all(steps[head:] > ranked.band * fastest) or ranked.band == 1
    assert np.all(np.diff(margins[:head]) <= 0)  # the safer first
    assert np.all(np.diff(steps[head:]) >= 0)  # then the faster
    if head:
        assert fastest in steps[:head]
