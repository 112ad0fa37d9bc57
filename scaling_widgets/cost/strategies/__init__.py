"""Parallelism strategies, one module each (MODEL.md §A.3, §B.3). A new strategy is a new file.

A strategy's module gives everything the rest of the house asks of it:

- ``NAME`` (what the CLI, the API and a saved scenario call it), ``LABEL`` (what people read) and
  ``ORDER`` (its place in lists);
- ``ZERO``: its own ZeRO stage, used when none is given (the weights whole on the data axis, 0,
  or sharded over it, 3);
- ``ON``: where a pipeline stage's chips go: all on the data axis X (``"x"``), all on the tensor
  axis Y (``"y"``), or split between them (``"x+y"``, the fastest legal split unless given);
- ``TRAFFIC``: the rows of the chapter's summary table (``transformer/layer.py``) it moves with
  the weights whole on X (ZeRO 0-2) and sharded over X (ZeRO-3);
- ``critical_tokens_per_chip(alpha, weights_per_compute, mx, my, d_ff)``: the tokens per chip above
  which it is compute-bound, NaN when no batch makes it so.

Tier 2 of cost/, beside hardware/ and the other registries (``tests/test_tiers.py`` declares the
order): it imports from ground/ alone."""

from __future__ import annotations

from collections.abc import Callable

from ..ground.records import record
from ..ground.registry import members


@record
class Strategy:
    """What a strategy's module declares (see the package's docstring)."""

    name: str
    label: str
    order: int
    zero: int
    on: str
    traffic: tuple  # (with whole weights, with sharded weights)
    critical_tokens_per_chip: Callable


def _member(module) -> Strategy:
    return Strategy(
        name=module.NAME,
        label=module.LABEL,
        order=module.ORDER,
        zero=module.ZERO,
        on=module.ON,
        traffic=tuple(module.TRAFFIC),
        critical_tokens_per_chip=module.critical_tokens_per_chip,
    )


STRATEGIES: dict[str, Strategy] = members(__name__, __path__, _member)
NAMES = tuple(STRATEGIES)
BEST = "fsdp+tp"  # the strategy that can take every layout: what the planner searches
