"""Summary: what binds and by how much, each threshold with its numbers, memory, step and days.

The sentences are ``text.explain``'s, the very ones the CLI prints, rendered as HTML/LaTeX.
"""

from __future__ import annotations

import ipywidgets as w
from traitlets import Instance, dlink, observe

from ..cost import Estimate
from ..text.explain import explain
from ..text.lines import html
from ._base import check_kwargs
from .analysis import Analysis
from .scenario import Scenario


class Summary(w.HTMLMath):
    """The current estimate in words and formulas, the numbers substituted.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario whose ``Analysis`` the summary follows; None: none, ``data`` is set by
        hand.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : Estimate or None
        The estimate described (``text.explain``).
    """

    data = Instance(Estimate, allow_none=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Summary", kwargs)
        super().__init__(**kwargs)
        self.add_class("sw-summary")
        if scenario is not None:
            dlink((Analysis.of(scenario), "estimate"), (self, "data"))

    @observe("data")
    def _redraw(self, change=None) -> None:
        if self.data is not None:
            self.value = "<br>".join(html(line) for line in explain(self.data))
