"""Recommendations: the planner's best layouts for the scenario's cluster, as a table that sorts
by any column, groups layouts whose numbers are the same, marks the scenario's own layout, and
applies a row when it is picked.

The table is a ``GridBox`` of ipywidgets (header buttons, HTML cells, a "use" button per row)
rather than a grid library: the ones on PyPI (ipydatagrid, ipyaggrid) draw on a canvas or need a
front-end extension of their own, and would not all render in Colab's ipywidgets 7 and in Voila
with the page's theme; twelve rows need none of that.
"""

from __future__ import annotations

import html
import math

import ipywidgets as w

from ..cost import Estimate, plan
from ..cost.ground.records import record
from ..cost.search.plan import plan_keywords
from ..cost.strategies import BEST
from ..text.explain import layout_text
from ..text.step import binds
from ..text.units import count, energy, nbytes, seconds
from ._base import Bound, Message, check_kwargs
from .scenario import Scenario

TOP = 10  # groups shown
# what a plan's row sets beside its knobs: a split by hand, under the best split's strategy, no
# measured step (that was another layout's), and no TP, EP or CP across pods (a plan's rows have
# none: MODEL.md §B.11 to §B.13)
AS_ROW = dict(strategy=BEST, optimal_split=False, axis_roles=(), measured_step_time=None,
              tp_pods=1, ep_pods=1, cp_pods=1)  # fmt: skip
CANDIDATES = 200  # best layouts read to form them: enough that ten groups are found
# column -> (header, sort key of a Row, largest first?)
COLUMNS = {
    "rank": ("#", lambda r: r.rank, False),
    "layout": ("layout: X x Y x Z", lambda r: (r.knobs["x"], r.knobs["y"], r.knobs["z"]), False),
    "step": ("step", lambda r: r.step, False),
    "mfu": ("MFU", lambda r: r.mfu, True),
    "memory": ("memory/chip", lambda r: r.memory, False),
    "headroom": ("fits: HBM left", lambda r: r.headroom, True),
    # the whole run, where the scenario has its tokens (a price: its cost); unknown sorts last
    "train": ("to train", lambda r: _known(r.wall), False),
    "cost": ("cost", lambda r: _known(r.cost), False),
    "energy": ("energy", lambda r: _known(r.energy), False),
    "binds": ("what binds", lambda r: r.binds, False),
}
SAME = 0.005  # layouts of one split whose steps differ by less than this share are one group


@record
class Row:
    """One group of near-identical layouts, shown by its best (``rank``).

    Attributes
    ----------
    rank : int
        The best layout's rank in the plan (0: the best).
    knobs : dict
        Its knobs, as ``Plan.layout`` gives them (slice_shape, x, y, z, zero, remat, ...).
    step : float
        Its step time, recompute charged [s].
    mfu : float
        Its MFU, a share of peak.
    memory : float
        The busiest chip's peak, reserved [bytes].
    headroom : float
        The share of HBM left.
    binds : str
        What binds its step, in words (``text.step.binds``).
    wall, cost, energy : float
        Its run's time to train on the wall clock [s], cost (chip-hours at the price given) and
        energy [J]; NaN where the scenario gives no tokens, price or chip power.
    alike : tuple of int
        The ranks of the other layouts in the group.
    """

    rank: int
    knobs: dict
    step: float
    mfu: float
    memory: float
    headroom: float  # share of HBM left
    binds: str
    alike: tuple  # ranks of the other layouts in the group
    wall: float = math.nan
    cost: float = math.nan
    energy: float = math.nan

    @classmethod
    def of(cls, p, rank: int, e: Estimate) -> Row:
        """The row of one layout of a plan, a group of its own.

        Parameters
        ----------
        p : Plan
            The plan.
        rank : int
            The layout's rank in the plan (0: the best).
        e : Estimate
            The layout's estimate, ``p.estimate(rank)``.

        Returns
        -------
        row : Row
            The layout's row, with no others alike.
        """
        index = p.order[rank]
        memory = float(p.memory[index])
        run = e.run
        return cls(
            rank,
            p.layout(rank),
            float(p.step_time[index]),
            float(e.mfu),
            memory,
            1 - memory / e.chip.usable_hbm,
            binds(e),
            (),
            *(_number(getattr(run, k, None)) for k in ("wall", "cost", "energy")),
        )

    def like(self, other: Row) -> bool:
        """The same split of the same slice at the same step: it differs only in knobs (ZeRO stage,
        recompute, microbatches) that change the memory, which a row of the best shows.

        Parameters
        ----------
        other : Row
            A row of another layout.

        Returns
        -------
        like : bool
            True when ``other`` has this row's x, y, z and slice_shape and a step within
            ``SAME`` (0.5 %) of this row's.
        """
        split = ("x", "y", "z", "slice_shape")
        return (
            all(other.knobs[k] == self.knobs[k] for k in split)
            and abs(other.step - self.step) <= SAME * self.step
        )


def _number(value) -> float:
    """A run's figure as a float; NaN where it is not known (None)."""
    return math.nan if value is None else float(value)


def _known(value: float) -> float:
    """A sort key that puts the unknown (NaN) last."""
    return math.inf if math.isnan(value) else value


def grouped(p) -> list[Row]:
    """The best ``TOP`` groups of near-identical layouts among the plan's best ``CANDIDATES``.

    Parameters
    ----------
    p : Plan
        The plan, its layouts that fit ranked best first.

    Returns
    -------
    rows : list of Row
        At most ``TOP`` (10) groups, in the plan's order. A layout like a group's best joins
        that group's ``alike``; one like none, past the tenth group, is left out.
    """
    groups: list[Row] = []
    for rank in range(min(CANDIDATES, len(p))):
        row = Row.of(p, rank, p.estimate(rank))
        same = next((i for i, g in enumerate(groups) if g.like(row)), None)
        if same is not None:
            g = groups[same]
            groups[same] = Row(**{**g.__dict__, "alike": (*g.alike, rank)})
        elif len(groups) < TOP:
            groups.append(row)
    return groups


class Recommendations(Bound, w.VBox):
    """A "plan" button, then the best layouts: step, MFU, memory, HBM left, the run's time to
    train, cost and energy (with the scenario's tokens and price), and what binds.

    A plan takes up to a tenth of a second (a full v5p pod), ten times a slider move, so it runs
    when asked, not on every change. A click on a header sorts by it (again: the other way).
    "use" applies that layout to the scenario, and the panel then shows that row's step and memory
    exactly (a measured step time belongs to another layout and is cleared). The row of the
    scenario's own layout is marked ●. A layout that gives TP another axis of the slice lists the
    axes in the order it uses ("on 20x28x16": TP takes the last). Once the batch, the model or
    anything else the plan was for changes, the rows are marked stale and cannot be used until
    planned again. With ``on_pin`` (the panel's ``Compare.pin``), "pin" sets a row's scenario
    beside the others.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario the widget is bound to; None: a new ``Scenario()`` of its own.
    on_pin : callable, optional
        Called with a row's scenario (``row_scenario``) when its "pin" is clicked; None: the
        rows have no "pin".
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    scenario : Scenario
        The scenario the widget is bound to.
    plan : Plan or None
        The plan on show; None before the first, or after a plan that failed.
    rows : list of Row
        The groups on show, in the plan's order.
    sorted_by : tuple of (str, bool)
        The column the table is sorted by (a key of ``COLUMNS``), and whether the largest is
        first.
    stale : bool
        The plan on show was made for other inputs than the scenario's now.
    """

    def __init__(self, scenario: Scenario | None = None, on_pin=None, **kwargs):
        check_kwargs("Recommendations", kwargs)
        self.scenario = scenario or Scenario()
        self._on_pin = on_pin
        self.plan, self.rows, self.sorted_by = None, [], ("rank", False)
        self._cells, self._marked = {}, None  # rank -> the row's widgets; the rank marked current
        self._planned_for = None
        self._run = w.Button(
            description="Plan every layout",
            icon="search",
            layout=w.Layout(width="auto", align_self="flex-start"),
        )
        self._summary = w.HTML()
        self._headers = {name: self._header(name) for name in COLUMNS}
        self._table = w.GridBox(
            layout=w.Layout(
                grid_template_columns=f"repeat({len(COLUMNS)}, auto) auto",
                grid_gap="2px 12px",
                align_items="center",
            )
        )
        self._table.add_class("sw-plan-table")
        self._message = Message()
        super().__init__([self._run, self._summary, self._table, self._message], **kwargs)
        self.add_class("sw-recommendations")
        self._run.on_click(self._on_run_click)
        self.scenario.observe(self._on_scenario_change, "revision")

    @property
    def stale(self) -> bool:
        """The plan on show was made for other inputs than the scenario's now."""
        return self.plan is not None and self._planned_for != self._inputs()

    def _inputs(self) -> dict:
        """What a plan is for (a change to any of it makes the plan stale; the layout's own knobs
        don't), the slice's axes in any order."""
        keywords = plan_keywords(*self.scenario.values())
        return {**keywords, "slice_shape": sorted(keywords["slice_shape"])}

    def _header(self, name: str) -> w.Button:
        button = w.Button(description=COLUMNS[name][0], layout=w.Layout(width="auto"))
        button.add_class("sw-plan-header")
        button.on_click(lambda _: self.sort_by(name))
        return button

    def _on_scenario_change(self, change=None) -> None:
        if self.stale:
            self._summary.value = "<b>These layouts were planned for other inputs: plan again.</b>"
        self._draw()

    def _show_scenario(self) -> None:
        pass  # the table shows a plan, not the scenario; it is redrawn when planning again

    def _on_run_click(self, button=None) -> None:
        try:
            self.plan = plan(**plan_keywords(*self.scenario.values()))
        except ValueError as err:
            self.plan, self.rows, self._cells = None, [], {}
            self._message.show(str(err))
            self._draw()
            return
        self._planned_for = self._inputs()
        self._message.clear()
        self.rows, self.sorted_by = grouped(self.plan), ("rank", False)
        self._build()
        alike = sum(len(r.alike) for r in self.rows)
        self._summary.value = (
            f"{len(self.plan.step_time):,} layouts evaluated, {len(self.plan):,} fit. The best "
            f"{len(self.rows)}"
            + (f", with {alike} near-identical layouts folded into their rows" if alike else "")
            + ":"
        )
        self._draw()

    def sort_by(self, column: str) -> None:
        """Sort the rows by ``column`` (a key of ``COLUMNS``); the same column again reverses.

        Parameters
        ----------
        column : str
            A key of ``COLUMNS``: "rank", "layout", "step", "mfu", "memory", "headroom",
            "train", "cost", "energy" or "binds".
        """
        name, reverse = self.sorted_by
        self.sorted_by = (column, not reverse if column == name else COLUMNS[column][2])
        self._draw()

    def pick(self, rank: int) -> None:
        """Apply the layout of the plan's ``rank`` (0: the best) to the scenario.

        Nothing happens with no plan, or a stale one.

        Parameters
        ----------
        rank : int
            The layout's rank in the plan (0: the best).
        """
        if self.plan is None or self.stale:
            return
        # The layout's knobs (slice_shape, x, y, z, zero, remat, schedule, ...) are the scenario's
        # fields.
        knobs = self.plan.layout(rank)
        self._apply(**AS_ROW, **knobs)

    def row_scenario(self, rank: int) -> Scenario:
        """A copy of the scenario with the layout of the plan's ``rank``: what "use" would make it,
        the panel's own scenario left as it is.

        Parameters
        ----------
        rank : int
            The layout's rank in the plan (0: the best).

        Returns
        -------
        scenario : Scenario
            The copy, with that layout by hand and no measured step time.
        """
        copy = Scenario.from_json(self.scenario.to_json())
        knobs = self.plan.layout(rank)
        copy.update(**AS_ROW, **knobs)
        return copy

    def current(self) -> int | None:
        """The rank of the row that is the scenario's layout now, if one is.

        Returns
        -------
        rank : int or None
            The row's plan rank; None when no row is the scenario's layout.
        """
        s = self.scenario
        if s.strategy != BEST or s.optimal_split:
            return None
        return next(
            (
                row.rank
                for row in self.rows
                if all(getattr(s, k) == v for k, v in row.knobs.items())
            ),
            None,
        )

    def _build(self) -> None:
        """The cells of every row, made once per plan: sorting and marking only rearrange them."""
        self._cells = {
            row.rank: [*(w.HTML() for _ in COLUMNS), self._use(row.rank)] for row in self.rows
        }
        self._marked = None
        for row in self.rows:
            self._fill(row, current=False)

    def _fill(self, row: Row, current: bool) -> None:
        shape = self.plan.axis_orders[0]
        alike = f" (+{len(row.alike)} alike)" if row.alike else ""
        title = html.escape(
            "; ".join(layout_text(self.plan.layout(r), shape) for r in row.alike), quote=True
        )
        # Groups are numbered 1 to 10 in the plan's order; a group's plan rank skips its alike.
        place = 1 + sorted(r.rank for r in self.rows).index(row.rank)
        texts = [
            ("● " if current else "") + str(place),
            layout_text(row.knobs, shape) + alike,
            seconds(row.step),
            f"{row.mfu:.1%}",
            nbytes(row.memory),
            f"{row.headroom:.0%}",
            *(
                "-" if math.isnan(v) else said(v)
                for v, said in ((row.wall, seconds), (row.cost, count), (row.energy, energy))
            ),
            row.binds,
        ]
        weight = "bold" if current else "normal"
        for cell, text in zip(self._cells[row.rank], texts):
            cell.value = (
                f'<span title="{title}" style="font-weight:{weight}">{html.escape(text)}</span>'
            )

    def _draw(self) -> None:
        column, reverse = self.sorted_by
        rows = sorted(self.rows, key=COLUMNS[column][1], reverse=reverse)
        now = self.current()
        if rows and now != self._marked:
            by_rank = {row.rank: row for row in self.rows}
            for rank, current in ((self._marked, False), (now, True)):
                if rank is not None:
                    self._fill(by_rank[rank], current)
            self._marked = now
        stale = self.stale
        for cells in self._cells.values():
            for button in getattr(cells[-1], "children", (cells[-1],)):
                button.disabled = stale
        header = [*self._headers.values(), w.HTML("")] if rows else []
        children = tuple(header + [cell for row in rows for cell in self._cells[row.rank]])
        if children != self._table.children:  # a slider move keeps the order: nothing to send
            self._table.children = children
        # the arrow last, after the rows it describes
        for name, button in self._headers.items():
            button.description = COLUMNS[name][0] + (
                (" ▼" if reverse else " ▲") if name == column else ""
            )

    def _use(self, rank: int) -> w.Widget:
        button = w.Button(description="use", layout=w.Layout(width="auto"))
        button.add_class("sw-plan-use")
        button.on_click(lambda _: self.pick(rank))
        if self._on_pin is None:
            return button
        pin = w.Button(description="pin", layout=w.Layout(width="auto"))
        pin.add_class("sw-plan-pin")
        pin.on_click(lambda _: self._pin(rank))
        return w.HBox([button, pin])

    def _pin(self, rank: int) -> None:
        if self.plan is None or self.stale:
            return
        try:
            self._on_pin(self.row_scenario(rank))
        except ValueError as err:  # a row the scenario cannot take: say why
            self._message.show(str(err))
