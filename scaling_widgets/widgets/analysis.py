"""The one observer that evaluates a scenario for the widgets.

``Analysis.of(scenario)`` is shared by every widget bound to that scenario: it recomputes once
per change (``Scenario.revision``) and publishes the results as traits, which the views follow.
Its ``estimate`` is ``scenario.estimate()`` itself; the plots' data are ``cost/views/``'s, for
the same values (the memory bars are ``compare_strategies``, as ``estimate --json`` lists them),
named by ``text/views.py``. A failure keeps the last results on screen and sets ``error``.
"""

from __future__ import annotations

import weakref

from traitlets import Dict, HasTraits, Instance, Unicode

from ..cost import Estimate, compare_strategies, evaluate, views
from ..cost.views import MemoryData, MeshData, RooflineData
from ..text import views as words
from .scenario import Scenario


class Analysis(HasTraits):
    """Estimates, roofline and memory of one scenario, recomputed when it changes.

    Parameters
    ----------
    scenario : Scenario
        The scenario to follow. Widgets share one through ``Analysis.of``.

    Attributes
    ----------
    scenario : Scenario
        The scenario followed.
    estimate : Estimate or None
        The scenario's own layout, evaluated (``scenario.estimate()``).
    strategies : dict
        Strategy name -> ``Estimate`` of its default layout, or the error saying why it cannot
        run; the current strategy's is ``estimate``.
    roofline : RooflineData or None
        The roofline plot's curves.
    memory : MemoryData or None
        The memory bars: each strategy's peak per chip.
    mesh : MeshData or None
        The groups on the slice's axes.
    error : str
        Why the last change could not be evaluated (the results before it stay); empty if it
        could.
    """

    scenario = Instance(Scenario)
    estimate = Instance(Estimate, allow_none=True)  # the scenario's own layout
    # strategy -> Estimate of its default layout, or the error saying why it cannot run
    strategies = Dict()
    roofline = Instance(RooflineData, allow_none=True)
    memory = Instance(MemoryData, allow_none=True)
    mesh = Instance(MeshData, allow_none=True)
    error = Unicode("")

    _shared = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, scenario: Scenario) -> Analysis:
        """The analysis every widget of this scenario shares.

        Parameters
        ----------
        scenario : Scenario
            The scenario to follow.

        Returns
        -------
        analysis : Analysis
            Made on the first call, then the same one for as long as the scenario lives.
        """
        if scenario not in cls._shared:
            cls._shared[scenario] = cls(scenario=scenario)
        return cls._shared[scenario]

    def __init__(self, scenario: Scenario):
        super().__init__(scenario=scenario)
        self._others = Others()
        scenario.observe(self._recompute, "revision")
        self._recompute()

    def _recompute(self, change=None) -> None:
        try:
            current, strategies, roofline, memory, mesh = evaluate_scenario(
                self.scenario, self._others
            )
        except ValueError as err:  # the scenario validated, so this is a bug; keep the last view
            self.error = f"Could not evaluate this scenario: {err}"
            return
        with self.hold_trait_notifications():
            self.strategies, self.roofline, self.memory, self.mesh = (
                strategies,
                roofline,
                memory,
                mesh,
            )
            self.estimate, self.error = current, ""


class Others:
    """The other strategies' own layouts, evaluated, kept while nothing they depend on changes:
    a move of the current layout alone (its strategy, split or ZeRO stage) leaves them as they
    were.

    Attributes
    ----------
    CURRENT_ONLY : tuple of str
        The fields the other strategies' own layouts leave out: a change of these alone keeps
        their estimates.
    state : dict or None
        The scenario's state the estimates are for, less ``CURRENT_ONLY``; None before the
        first.
    estimates : dict
        Strategy name -> ``Estimate`` or the error saying why it cannot run, the current
        strategy's left out.
    """

    # what the other strategies' own layouts leave out of the scenario (``compare_strategies``)
    CURRENT_ONLY = ("strategy", "optimal_split", "x", "y", "zero", "axis_roles")

    def __init__(self):
        self.state: dict | None = None
        self.estimates: dict = {}

    def known(self, s: Scenario) -> dict:
        """The estimates still right for this scenario (empty when something they depend on
        changed).

        Parameters
        ----------
        s : Scenario
            The scenario as it stands.

        Returns
        -------
        estimates : dict
            Strategy name -> ``Estimate`` or error, a copy; empty when they are stale.
        """
        state = {k: v for k, v in s.state().items() if k not in self.CURRENT_ONLY}
        try:
            same = state == self.state
        except ValueError:  # an array among the values: compare nothing, evaluate again
            same = False
        if not same:
            self.state, self.estimates = state, {}
        return dict(self.estimates)

    def keep(self, strategies: dict, current: str) -> None:
        """Keep the other strategies' estimates for the next change.

        Parameters
        ----------
        strategies : dict
            Strategy name -> ``Estimate`` or the error saying why it cannot run, as
            ``compare_strategies`` gives them.
        current : str
            The current layout's strategy, which is not kept: it moves with the layout.
        """
        self.estimates.update({k: v for k, v in strategies.items() if k != current})


def evaluate_scenario(s: Scenario, others: Others | None = None):
    """(current estimate, {strategy: estimate or error}, RooflineData, MemoryData, MeshData).

    ``others`` keeps the other strategies' estimates from one call to the next.

    Parameters
    ----------
    s : Scenario
        The scenario to evaluate.
    others : Others, optional
        The other strategies' estimates kept from the last call, updated here; None: every
        strategy evaluated anew.

    Returns
    -------
    current : Estimate
        The scenario's own layout, evaluated.
    strategies : dict
        Strategy name -> ``Estimate`` of its default layout, or the error saying why it cannot
        run; the current strategy's is ``current``.
    roofline : RooflineData
        The roofline plot's curves, named (``text/views.py``).
    memory : MemoryData
        Each strategy's peak per chip, as the memory bars draw it.
    mesh : MeshData
        The groups on the slice's axes.
    """
    values = s.values()
    current = evaluate(*values)
    known = {} if others is None else others.known(s)
    strategies = compare_strategies(*values, known={**known, current.strategy: current})
    if others is not None:
        others.keep(strategies, current.strategy)
    return (
        current,
        strategies,
        words.roofline(views.roofline(current), current),
        words.memory(views.memory_bars(strategies, current)),
        words.mesh(views.mesh(current), current),
    )
