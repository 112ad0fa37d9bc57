"""Recommendations: the planner's best layouts for the scenario's cluster; pick one to apply it."""

from __future__ import annotations

import ipywidgets as w

from ..cost import plan
from ..text.explain import binds
from ..text.units import mesh, nbytes, seconds
from ._base import Bound, Message, check_kwargs
from .scenario import Scenario

TOP = 10
# The fields a plan is for; a change to any of them makes it stale (the layout's own knobs don't).
PLANNED_FOR = (
    "model", "hardware", "pods", "batch", "seq_len", "precision", "mfu", "tokens", "attention_flops", "ring_factor",
    "halve_without_wrap", "latency", "overhead_bytes", "fits_below", "sequence_parallel",
)  # fmt: skip


class Recommendations(Bound, w.VBox):
    """A "plan" button, then the ten best layouts with step time, memory and what binds.

    A plan takes up to a tenth of a second (a full v5p pod), ten times a slider move, so it runs
    when asked, not on every change.
    Selecting a row applies that layout to the scenario, and the panel then shows that row's
    step and memory exactly (a measured step time belongs to another layout and is cleared).
    A layout that gives TP another axis of the slice lists the axes in the order it uses ("on
    20x28x16": TP takes the last); applying it writes the slice that way. Once the batch, the
    model or anything else the plan was for changes, the rows are marked stale and cannot be
    picked until planned again.
    """

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Recommendations", kwargs)
        self.scenario = scenario or Scenario()
        self.plan = None
        self._planned_for = None
        self._run = w.Button(description="Plan every layout", icon="search")
        self._summary = w.HTML()
        self._rows = w.RadioButtons(options=[], layout=w.Layout(width="100%"))
        self._rows.add_class("sw-recommendation-rows")
        self._message = Message()
        super().__init__([self._run, self._summary, self._rows, self._message], **kwargs)
        self.add_class("sw-recommendations")
        self._run.on_click(self._on_run_click)
        self._rows.observe(self._on_rows_change, "value")
        self.scenario.observe(self._on_scenario_change, "revision")

    @property
    def stale(self) -> bool:
        """The plan on show was made for other inputs than the scenario's now."""
        return self.plan is not None and self._planned_for != self._inputs()

    def _inputs(self) -> tuple:
        s = self.scenario
        return (*(getattr(s, name) for name in PLANNED_FOR), sorted(s.slice_shape))

    def _on_scenario_change(self, change=None) -> None:
        stale = self.stale
        self._rows.disabled = stale
        if stale:
            self._summary.value = "<b>These layouts were planned for other inputs: plan again.</b>"

    def _show_scenario(self) -> None:
        pass  # the table shows a plan, not the scenario; it is redrawn when planning again

    def _on_run_click(self, button=None) -> None:
        cluster, workload, layout, options = self.scenario.values()
        try:
            self.plan = plan(
                model=workload.model, chip=cluster.chip, batch=workload.batch, seq_len=workload.seq_len,
                slice_shape=cluster.slice_shape, pods=cluster.pods, mfu=options.mfu, precision=workload.precision,
                tokens=workload.tokens, attention_flops=options.attention_flops, exact=options.exact,
                overhead_bytes=options.overhead_bytes, fits_below=options.fits_below,
                sequence_parallel=layout.sequence_parallel,
            )  # fmt: skip
        except ValueError as err:
            self._message.show(str(err))
            return
        self._planned_for = self._inputs()
        self._rows.disabled = False
        self._message.clear()
        p = self.plan
        self._summary.value = f"{len(p.step_time):,} layouts evaluated, {len(p):,} fit. The best {min(TOP, len(p))}:"
        with self.hold_trait_notifications():
            self._syncing = True  # filling the list is not a choice of the user's
            try:
                self._rows.options = [(self._label(r), r) for r in range(min(TOP, len(p)))]
                self._rows.value = None
            finally:
                self._syncing = False

    def _label(self, rank: int) -> str:
        p, k = self.plan, self.plan.layout(rank)
        schedule = f", {k['schedule']} v={k['virtual_stages']}" if k["schedule"] == "interleaved" else ""
        axes = f" on {mesh(k['slice_shape'])}" if k["slice_shape"] != p.axis_orders[0] else ""  # TP on another axis
        step = seconds(float(p.step_time[p.order[rank]]))
        memory = nbytes(float(p.memory[p.order[rank]]))
        return (
            f"{rank + 1}. X {k['x']} x Y {k['y']} x Z {k['z']}{axes}, ZeRO-{k['zero']}, {k['remat']}{schedule},"
            f" m={k['microbatches']}: {step}, {memory}/chip; {binds(p.estimate(rank))}"
        )

    def _on_rows_change(self, change) -> None:
        if change["new"] is None or self._syncing or self.stale:
            return
        # The layout's knobs (slice_shape, x, y, z, zero, remat, schedule, ...) are the scenario's fields.
        knobs = self.plan.layout(change["new"])
        self._apply(strategy="fsdp+tp", optimal_split=False, axis_roles=(), measured_step_time=None, **knobs)
