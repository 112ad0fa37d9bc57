"""The strategy map: the planner's best layout at each global batch and count of chips, each cell
coloured by its family and shaded by its MFU, the chapter's thresholds drawn over it.

``MapPlot`` is the figure (a ``bqplot`` grid heat map, log-log), ``StrategyMapView`` the map with
its button, legend and status, bound to a scenario: hovering a cell names its layout, clicking
one loads it into the scenario. A map takes about half a second (24 x 24 cells, the recompute
policy and schedule held), so it is drawn when asked, not on every change.
"""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Instance, observe

from ..catalog import name_of
from ..cost.search.map_axes import BATCHES, batch_axis, chip_axis, chip_range
from ..cost.search.strategy_map import FAMILIES, NONE_FITS, StrategyMap, map_keywords, strategy_map
from ..presets import MODELS
from ..text.strategy_map import FAMILY_NAMES, THRESHOLD_NAMES, cell_text
from ._base import Bound, Message, check_kwargs, vertical_axis
from .recommendations import AS_ROW
from .scenario import Scenario
from .theme import color

# Each family's ramp, from its lowest MFU on the map to its highest (light to dark); the last two
# are the cells where nothing fits and where no layout runs. Hex colours: the scale interpolates
# between them, which a page's CSS variable would not allow.
RAMPS = {
    "dp": ("#c6dbef", "#08519c"),
    "fsdp": ("#c7e9c0", "#006d2c"),
    "tp": ("#fdd0a2", "#d94801"),
    "pp": ("#dadaeb", "#54278f"),
    "ep_cp": ("#fcc5c0", "#ae017e"),
}
LINE_STYLES = {"fsdp": "dashed", "fsdp+tp": "dotted"}
NONE_FITS_COLOR, NONE_RUNS_COLOR = "#969696", "#e0e0e0"
STOPS = [c for f in FAMILIES for c in RAMPS[f]] + [NONE_FITS_COLOR, NONE_RUNS_COLOR]
LIGHTEST = 0.15  # the lowest MFU's place on its family's ramp: light, not white


def shades(m: StrategyMap) -> np.ndarray:
    """Each cell's place on the colour scale: 2k + s for family k, s from LIGHTEST (the map's
    lowest MFU) to 1 (its highest); the stops past the families where nothing fits or runs.

    Parameters
    ----------
    m : StrategyMap
        The map.

    Returns
    -------
    place : np.ndarray
        Each cell's place on the colour scale (``STOPS``), (rows, columns).
    """
    mfu = np.where(m.fits, m.mfu, np.nan)
    lo, hi = (np.nanmin(mfu), np.nanmax(mfu)) if m.fits.any() else (0.0, 1.0)
    share = (mfu - lo) / (hi - lo) if hi > lo else np.ones_like(mfu)
    place = 2 * m.family + LIGHTEST + (1 - LIGHTEST) * np.nan_to_num(share)
    none = np.where(m.runs, 2 * len(FAMILIES), 2 * len(FAMILIES) + 1)
    return np.where(m.family == NONE_FITS, none, place)


def edges(values: np.ndarray) -> np.ndarray:
    """The cells' edges around ``values`` on a log scale: midway between neighbours, half a step
    beyond the ends.

    Parameters
    ----------
    values : np.ndarray
        The cells' centres, ascending: the map's batches [tokens] or chips [chips].

    Returns
    -------
    edges : np.ndarray
        One more edge than ``values``, in their unit; a single value gets edges at e^±0.35
        times it.
    """
    logs = np.log(values.astype(float))
    if len(logs) == 1:
        return np.exp(logs[0] + np.array([-0.35, 0.35]))
    middle = (logs[1:] + logs[:-1]) / 2
    return np.exp(np.concatenate([[2 * logs[0] - middle[0]], middle, [2 * logs[-1] - middle[-1]]]))


class MapPlot(bq.Figure):
    """The map: global batch across, chips up, both log; ``data`` a ``StrategyMap`` of two rows
    and two columns or more (bqplot squeezes a grid of one away).

    Parameters
    ----------
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    data : StrategyMap or None
        The map drawn: each cell's best layout, rows the chip counts and columns the batches.
    """

    data = Instance(StrategyMap, allow_none=True)

    def __init__(self, **kwargs):
        check_kwargs("MapPlot", kwargs)
        sx, sy = bq.LogScale(), bq.LogScale()
        self._cells = bq.GridHeatMap(
            row=[1, 2, 3],
            column=[1, 2, 3],
            color=np.full((2, 2), np.nan),  # bqplot squeezes a 1 x 1 grid away
            scales={
                "row": sy,
                "column": sx,
                "color": bq.ColorScale(colors=STOPS, min=0, max=len(STOPS) - 1),
            },
            stroke="white",
            null_color=NONE_RUNS_COLOR,
        )
        self._hover = _hover_squares(sx, sy)
        self._thresholds, self._now = _threshold_lines(sx, sy), _scenario_dot(sx, sy)
        axes = [
            bq.Axis(scale=sx, label="global batch (tokens)", tick_format=".2s"),
            vertical_axis(sy, label="chips", tick_format=".2s", label_offset="52px"),
        ]
        super().__init__(
            marks=[self._cells, *self._thresholds.values(), self._now, self._hover],
            axes=axes,
            title="The best layout at each batch and count of chips",
            fig_margin=dict(top=40, bottom=50, left=76, right=20),
            layout=w.Layout(width="100%", min_width="320px", height="460px"),
        )
        self.add_class("sw-strategy-map")

    def mark_scenario(self, batch: float | None, chips: float | None) -> None:
        """A dot at the scenario's batch and chips (none when it is off the map).

        Parameters
        ----------
        batch : float, optional
            The scenario's global batch B [tokens]; None: no dot.
        chips : float, optional
            The scenario's chips in all, a slice's times the pods [chips]; None: no dot.
        """
        m = self.data
        inside = m is not None and batch is not None and chips is not None
        if inside:
            x, y = edges(m.batches), edges(m.chips)
            inside = x[0] <= batch <= x[-1] and y[0] <= chips <= y[-1]
        with self._now.hold_sync():
            self._now.x, self._now.y = ([batch], [chips]) if inside else ([], [])

    @observe("data")
    def _redraw(self, change=None) -> None:
        m = self.data
        if m is None:
            return
        rows, columns = m.step_time.shape
        x, y = np.meshgrid(m.batches, m.chips)  # row-major: cell i·columns + j
        texts = [cell_text(m, i, j) for i in range(rows) for j in range(columns)]
        with self._cells.hold_sync():
            self._cells.color = shades(m)  # first: the edges are checked against its shape
            self._cells.row, self._cells.column = edges(m.chips), edges(m.batches)
        with self._hover.hold_sync():
            self._hover.x, self._hover.y, self._hover.names = x.ravel(), y.ravel(), texts
        for name, line in self._thresholds.items():
            with line.hold_sync():
                line.x, line.y = staircase(m, name)


def staircase(m: StrategyMap, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A threshold's batch on each row, drawn across the row's height, on the rows where it falls
    on the map (bqplot draws no gap: a NaN would break the path).

    Parameters
    ----------
    m : StrategyMap
        The map.
    name : str
        The threshold, a key of ``m.thresholds``: "fsdp" or "fsdp+tp".

    Returns
    -------
    x : np.ndarray
        The threshold's batch, twice for each row where it falls on the map [tokens].
    y : np.ndarray
        Those rows' lower and upper edges [chips].
    """
    at, y = m.thresholds[name], edges(m.chips)
    lo, hi = edges(m.batches)[[0, -1]]
    shown = (at >= lo) & (at <= hi)
    x = np.repeat(at[shown], 2)
    return x, np.column_stack([y[:-1], y[1:]])[shown].ravel()


class StrategyMapView(Bound, w.VBox):
    """The map of the scenario's model, chip and options, drawn when asked (or when a model is
    chosen in its own list, which sets the scenario's); a cell clicked loads its batch, chips and
    layout into the scenario. The recompute policy and schedule are the
    scenario's unless "search every recompute policy and schedule" is ticked (several times
    slower). Once the model, the chip or another option changes, the map is marked stale and its
    cells cannot be loaded until drawn again.

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
    plot : MapPlot
        The map's figure, shown once drawn.
    data : StrategyMap or None
        The map on show (``plot.data``); None before the first is drawn.
    stale : bool
        The map on show was drawn for other inputs than the scenario's now.
    """

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("StrategyMapView", kwargs)
        self.scenario = scenario or Scenario()
        self.plot = MapPlot()
        self._drawn_for = None
        self._draw = w.Button(description="Draw the map", icon="th", layout=w.Layout(width="auto"))
        # the model of the map (the scenario's): a preset chosen here draws its map at once
        self._model = w.Dropdown(
            description="Model",
            options=[(m.name, k) for k, m in MODELS.items()] + [("custom", "custom")],
            layout=w.Layout(width="auto"),
        )
        self._search_all = w.Checkbox(
            description="search every recompute policy and schedule (slower)",
            indent=False,
            layout=w.Layout(width="auto"),
        )
        self._status = w.HTML()
        self._legend = w.HTML(_legend(None))
        self._picked = w.HTML()
        self._message = Message()
        super().__init__(
            [
                w.HBox([self._model, self._draw, self._search_all]),
                self._status,
                self._message,
                self._legend,
                self._picked,
            ],
            **kwargs,
        )
        self.add_class("sw-map-view")
        self._draw.on_click(self._on_draw_click)
        self.plot._hover.on_element_click(self._on_cell_click)
        self.plot._cells.on_element_click(self._on_cell_click)
        self._model.observe(self._on_model_change, "value")
        self.scenario.observe(self._on_scenario_change, "revision")
        self.scenario.observe(self._sync, "model")
        self._sync()

    def _show_scenario(self) -> None:
        self._model.value = name_of(self.scenario.model, MODELS) or "custom"

    def _on_model_change(self, change) -> None:
        if self._syncing or change["new"] == "custom":
            return
        if self._apply(model=MODELS[change["new"]]):
            self.draw()

    @property
    def data(self) -> StrategyMap | None:
        """The map on show (``plot.data``); None before the first is drawn."""
        return self.plot.data

    @property
    def stale(self) -> bool:
        """The map on show was drawn for other inputs than the scenario's now."""
        return self.data is not None and self._drawn_for != self._inputs()

    def _inputs(self) -> dict:
        """What the map is for: the plan's keywords but its axes, the recompute policy and the
        schedule held unless every one is searched."""
        keywords = map_keywords(*self.scenario.values())
        if not self._search_all.value:
            keywords.update(remat=self.scenario.remat, schedule=self.scenario.schedule)
        return keywords

    def draw(self) -> None:
        """Draw the map for the scenario as it stands."""
        try:
            keywords = self._inputs()
            chip = keywords["chip"]
            m = strategy_map(
                **keywords,
                batches=batch_axis(keywords["seq_len"], *BATCHES),
                chips=chip_axis(chip, *chip_range(chip)),
            )
        except ValueError as err:  # the last map stays on show
            self._message.show(str(err))
            return
        self._message.clear()
        self._drawn_for = keywords
        self.plot.data = m
        if self.plot not in self.children:  # shown once drawn: a hidden figure has no size
            self.children = (*self.children[:-1], self.plot, self.children[-1])
        self._legend.value = _legend(m)
        held = (
            "every recompute policy and schedule searched"
            if self._search_all.value
            else f"recompute {self.scenario.remat} and schedule {self.scenario.schedule} held"
        )
        self._status.value = html.escape(
            f"{m.evaluated:,} layouts evaluated ({held}). Hover a cell for its layout; click it "
            "to load it."
        )
        self._picked.value = ""
        self._mark()

    def pick(self, row: int, column: int) -> None:
        """Load the cell's batch, chips and best layout into the scenario.

        Nothing is loaded with no map, or a stale one; a cell where nothing fits says why.

        Parameters
        ----------
        row : int
            The cell's row, an index into the map's chips.
        column : int
            The cell's column, an index into the map's batches.
        """
        m = self.data
        if m is None or self.stale:
            return
        knobs = m.layout(row, column)
        if knobs is None:
            self._picked.value = html.escape(cell_text(m, row, column))
            return
        self._apply(batch=float(m.batches[column]), **{**AS_ROW, **knobs})
        self._picked.value = html.escape("Loaded: " + cell_text(m, row, column))

    def _on_draw_click(self, button=None) -> None:
        self.draw()

    def _on_cell_click(self, mark, event) -> None:
        data = event.get("data", {})
        columns = len(self.data.batches) if self.data is not None else 1
        if "rowNum" in data:  # the grid's own cell
            self.pick(int(data["rowNum"]), int(data["columnNum"]))
        elif "index" in data:  # the square over it
            self.pick(*divmod(int(data["index"]), columns))

    def _on_scenario_change(self, change=None) -> None:
        if self.stale:
            self._status.value = "<b>This map was drawn for other inputs: draw it again.</b>"
        self._mark()

    def _mark(self) -> None:
        e = self.scenario
        self.plot.mark_scenario(float(e.batch) if e.batch else None, _chips(e))


def _chips(scenario: Scenario) -> float | None:
    shape = scenario.slice_shape
    return None if shape is None else float(np.prod(shape) * (scenario.pods or 1))


def _legend(m: StrategyMap | None) -> str:
    swatch = '<span style="display:inline-block;width:12px;height:12px;background:{};margin:0 4px -2px 8px"></span>{}'  # noqa: E501
    parts = [swatch.format(RAMPS[f][1], html.escape(FAMILY_NAMES[f])) for f in FAMILIES]
    parts += [
        swatch.format(NONE_FITS_COLOR, "nothing fits"),
        swatch.format(NONE_RUNS_COLOR, "no layout runs"),
    ]
    shade = ""
    if m is not None and m.fits.any():
        mfu = m.mfu[m.fits]
        shade = f"Darker is a higher MFU ({mfu.min():.0%} to {mfu.max():.0%}). "
    lines = " ".join(
        f"{'Dashed' if LINE_STYLES[n] == 'dashed' else 'Dotted'}: {THRESHOLD_NAMES[n]} turns"
        " compute-bound to the right of it (the chapter's threshold, row by row)."
        for n in THRESHOLD_NAMES
    )
    return "".join(parts) + "<br>" + html.escape(shade + lines)


def _hover_squares(sx, sy) -> bq.Scatter:
    """Over each cell, an invisible square that names its layout and takes the click."""
    hover = bq.Scatter(
        x=[],
        y=[],
        names=[],
        display_names=False,
        scales={"x": sx, "y": sy},
        marker="square",
        default_size=260,
        tooltip=bq.Tooltip(fields=["name"], show_labels=False),
    )
    # unseen: bqplot 0.13 names the markers' opacities "opacities", 0.12 (Colab)
    # "default_opacities"
    name = "opacities" if "opacities" in hover.trait_names() else "default_opacities"
    setattr(hover, name, [0.0])
    return hover


def _threshold_lines(sx, sy) -> dict:
    """The chapter's thresholds, a line style each."""
    return {
        name: bq.Lines(
            x=[],
            y=[],
            scales={"x": sx, "y": sy},
            colors=[color("ink")],
            line_style=LINE_STYLES[name],
            stroke_width=3,
        )
        for name in THRESHOLD_NAMES
    }


def _scenario_dot(sx, sy) -> bq.Scatter:
    """The scenario's own batch and chips."""
    return bq.Scatter(
        x=[],
        y=[],
        scales={"x": sx, "y": sy},
        marker="circle",
        colors=[color("ink")],
        stroke="white",
        stroke_width=2,
        default_size=70,
    )
