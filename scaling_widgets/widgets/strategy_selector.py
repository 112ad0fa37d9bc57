"""StrategySelector: DP, FSDP, TP or FSDP + TP; the split; pipeline stages and microbatches;
expert and context parallelism out of the data axis (MODEL.md §D)."""

from __future__ import annotations

import html

import ipywidgets as w
from traitlets import Dict

from ..cost.schedules import SCHEDULES, runs
from ..cost.strategies import BEST, STRATEGIES
from ..fields import FIELDS
from ..text.explain import layout_name
from ._base import Bound, Message, check_kwargs, control
from .analysis import Analysis
from .scenario import Scenario

WIDE = "230px"  # a dropdown of long names


def _narrow() -> dict:
    """A short control's settings (a layout of its own: widgets share none)."""
    return dict(layout=w.Layout(width="190px"), style={"description_width": "100px"})


class StrategySelector(Bound, w.VBox):
    """Choose the strategy and, for FSDP + TP, the best split or one by hand.

    ``value`` holds strategy, optimal_split, x, y, z and microbatches: the layout in use.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario the widget is bound to; None: a new ``Scenario()`` of its own.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    scenario : Scenario
        The scenario the widget is bound to.
    analysis : Analysis
        The scenario's shared analysis, whose estimate and mesh the controls show.
    value : dict
        The layout in use: "strategy", "zero", "optimal_split", "x", "y", "z" (X, Y, Z [chips]),
        "microbatches", "ep", "etp" and "cp"; read-only.
    """

    value = Dict(read_only=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("StrategySelector", kwargs)
        self.scenario = scenario or Scenario()
        self.analysis = Analysis.of(self.scenario)
        self._implied = w.HTML()
        self._message = Message()
        rows = [*self._strategy_rows(), self._pipeline_rows(), self._message, self._implied]
        super().__init__(rows, **kwargs)
        self.add_class("sw-strategy-selector")
        # recomputed after every change of the scenario
        self.analysis.observe(self._sync, "estimate")
        self._sync()

    def _strategy_rows(self) -> list:
        """The strategy, its ZeRO stage, and the split: the fastest, or one by hand."""
        self._strategy = control("strategy", w.ToggleButtons)
        self._strategy.style.button_width = "90px"
        # ipywidgets 8 shows nothing for an option whose value is None: "own" stands for it.
        self._zero = control("zero", layout=w.Layout(width="230px"))
        self._zero.options = [("strategy's own", "own"), *self._zero.options]
        self._optimal = control("optimal_split")
        self._split = w.Dropdown(description="FSDP x TP")
        self._strategy.observe(self._on_strategy_change, "value")
        self._optimal.observe(self._on_optimal_change, "value")
        self._split.observe(self._on_split_change, "value")
        self._bind(
            self._zero,
            "zero",
            parse=lambda v: None if v == "own" else v,
            show=lambda z: "own" if z is None else z,
        )
        return [self._strategy, self._zero, w.HBox([self._optimal, self._split])]

    def _pipeline_rows(self) -> w.VBox:
        """Pipeline stages, microbatches and the schedule; expert and context parallelism, groups
        out of the data axis X (MODEL.md §D.2, §D.3)."""
        self._stages = control("z", **_narrow())
        self._microbatches = control("microbatches", **_narrow())
        self._schedule = control("schedule", layout=w.Layout(width=WIDE))
        self._virtual = control("virtual_stages", **_narrow())
        self._sequence_parallel = control("sequence_parallel")
        self._ep_overlap = control("ep_overlap")
        self._ep = control("ep", **_narrow())
        # ticked: expert TP 1, the EP group folded over TP x X (whole experts on each chip)
        self._ep_over_tp = w.Checkbox(
            description=FIELDS["etp"].label, indent=False, layout=w.Layout(width="120px")
        )
        # "auto" stands for None: CP 1, or the smallest that gives each replica whole sequences
        self._cp = w.Dropdown(
            description=FIELDS["cp"].label, options=_cp_options(None), **_narrow()
        )
        self._cp_kind = control("cp_kind", layout=w.Layout(width=WIDE))
        self._ends = control("ends_as_layers", layout=w.Layout(width=WIDE))
        self._stages.observe(self._on_stages_change, "value")
        self._microbatches.observe(self._on_microbatches_change, "value")
        self._schedule.observe(self._on_schedule_change, "value")
        plain = {
            "virtual_stages": self._virtual,
            "sequence_parallel": self._sequence_parallel,
            "ep_overlap": self._ep_overlap,
            "ep": self._ep,
            "cp_kind": self._cp_kind,
            "ends_as_layers": self._ends,
        }
        for field, child in plain.items():
            self._bind(child, field)
        self._bind(
            self._ep_over_tp,
            "etp",
            parse=lambda ticked: 1 if ticked else None,
            show=lambda etp: etp == 1,
        )
        self._bind(
            self._cp,
            "cp",
            parse=lambda v: None if v == "auto" else v,
            show=lambda cp: "auto" if cp is None else cp,
        )
        return w.VBox(
            [
                w.HBox([self._stages, self._microbatches]),
                w.HBox([self._schedule, self._virtual, self._sequence_parallel]),
                self._ends,
                w.HBox([self._ep, self._ep_over_tp, self._ep_overlap]),
                w.HBox([self._cp, self._cp_kind]),
            ]
        )

    def _show_scenario(self) -> None:
        s, e, mesh = self.scenario, self.analysis.estimate, self.analysis.mesh
        if e is None or mesh is None:  # never evaluated: the controls as set, and why
            super()._show_scenario()
            self._message.show(self.analysis.error)
            return
        if list(self._cp.options) != _cp_options(s.cp):  # a CP set elsewhere (API, file)
            self._cp.options = _cp_options(s.cp)
        super()._show_scenario()
        self._strategy.value = s.strategy
        self._zero.disabled = STRATEGIES[s.strategy].on == "y"  # no data axis to shard over
        manual_ok = s.strategy == BEST and not s.axis_roles
        self._optimal.value = s.optimal_split
        self._optimal.disabled = not manual_ok
        self._split.options = [(f"{x} x {y}", (x, y)) for x, y in mesh.splits]
        self._split.value = (mesh.x, mesh.y) if (mesh.x, mesh.y) in mesh.splits else None
        self._split.disabled = not manual_ok or s.optimal_split
        self._stages.value = mesh.z
        self._stages.disabled = bool(s.axis_roles)
        self._microbatches.value = int(e.microbatches)
        self._schedule.value = s.schedule
        # a V-shaped schedule runs its own two chunks: nothing to choose
        own = SCHEDULES[s.schedule]
        self._virtual.disabled = not own.takes_virtual_stages or bool(own.fixed_chunks)
        self._ends.disabled = mesh.stages == 1 and s.ends_as_layers == "none"
        # a dense model has no experts to split
        self._ep.disabled = s.model.moe is None and s.ep == 1
        self._ep_over_tp.disabled = s.model.moe is None and s.etp is None
        self._ep_overlap.disabled = s.model.moe is None and not s.ep_overlap
        self._cp_kind.disabled = int(e.layout.cp) == 1
        self.set_trait(
            "value",
            {
                "strategy": s.strategy,
                "zero": int(e.zero),
                "optimal_split": s.optimal_split,
                "x": mesh.x,
                "y": mesh.y,
                "z": mesh.z,
                "microbatches": int(e.microbatches),
                "ep": s.ep,
                "etp": s.etp,
                "cp": int(e.layout.cp) // int(e.layout.cp_pods),  # a pod's, as s.cp
            },
        )
        self._implied.value = _implied(s, e, mesh)

    def _on_strategy_change(self, change) -> None:
        keeps_zero = STRATEGIES[change["new"]].on != "y"  # a ZeRO stage shards over the data axis
        self._apply(strategy=change["new"], zero=self.scenario.zero if keeps_zero else None)

    def _on_optimal_change(self, change) -> None:
        mesh = self.analysis.mesh  # switching to a manual split starts from the best one
        split = {} if mesh is None else {"x": mesh.x, "y": mesh.y}
        self._apply(optimal_split=change["new"], **split)

    def _on_split_change(self, change) -> None:
        if change["new"] is not None and not self.scenario.optimal_split:
            x, y = change["new"]
            self._apply(x=x, y=y)

    def _on_stages_change(self, change) -> None:
        z = change["new"]
        s = self.scenario
        chips = s.chips
        if (
            z >= 1
            and chips % z == 0
            and s.strategy == BEST
            and not s.optimal_split
            and (chips // z) % s.y == 0
        ):
            self._apply(z=z, x=chips // z // s.y)
        else:
            self._apply(z=z)

    def _on_schedule_change(self, change) -> None:
        # A schedule that runs chunks starts at its first count of them (a V at its two); one
        # that does not, at 1.
        own = SCHEDULES[change["new"]]
        virtual = max(own.virtual_stages[0], self.scenario.virtual_stages)
        virtual = own.fixed_chunks or (virtual if own.takes_virtual_stages else 1)
        # microbatches it cannot run (DualPipe's m ≥ 2Z) go back to the fastest it can
        mesh = self.analysis.mesh
        s = self.scenario
        m, z = s.microbatches, ((s.z or 1) * s.pp_pods if mesh is None else mesh.stages)
        runnable = m is None or bool(runs(schedule=change["new"], stages=z, microbatches=m))
        self._apply(
            schedule=change["new"], virtual_stages=virtual, microbatches=m if runnable else None
        )

    def _on_microbatches_change(self, change) -> None:
        self._apply(microbatches=change["new"])


def _cp_options(cp: int | None) -> list:
    """ "auto" and the powers of two to 256, with a CP given otherwise (the API, a file) kept."""
    shown = [("auto", "auto"), *((str(2**k), 2**k) for k in range(9))]
    return shown if cp is None or cp in (v for _, v in shown) else [*shown, (str(cp), cp)]


def _implied(s: Scenario, e, mesh) -> str:
    bubble = f", bubble {float(e.bubble):.0%}" if mesh.stages > 1 else ""
    how = ""
    if s.strategy == BEST and s.optimal_split and not s.axis_roles:
        how = (
            " &mdash; the fastest legal split (the chapter's X<sub>opt</sub> &asymp;"
            f" {float(e.x_opt):,.0f})"
        )
    return f"Layout: <b>{html.escape(layout_name(e))}{bubble}</b> on {mesh.chips:,} chips{how}"
