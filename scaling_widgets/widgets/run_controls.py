"""RunControls: what the whole run meets and costs (MODEL.md §H): failures, checkpoints, restarts,
the data center's PUE, the chip's power and a price. The summary's time to train follows."""

from __future__ import annotations

import ipywidgets as w

from ..fields import FIELDS
from ._base import Bound, Message, check_kwargs, control
from .scenario import Scenario

# field -> (what a box shows of it, as a multiple of the SI value); None: an empty box
SHOWN = {
    "failure_rate": 1.0,
    "checkpoint_bw": 1e-9,  # GB/s
    "restart_time": 1.0,
    "checkpoint_interval": 1.0,
    "pue": 1.0,
    "chip_power": 1.0,
    "price_per_chip_hour": 1.0,
}
OPTIONAL = ("checkpoint_interval", "chip_power", "price_per_chip_hour")  # empty: the default


class RunControls(Bound, w.VBox):
    """One box per input of the whole run; an empty optional box is its default (Young/Daly's
    interval, the chip's rated power, no price).

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
    """

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("RunControls", kwargs)
        self.scenario = scenario or Scenario()
        box = dict(widget=w.Text, continuous_update=False, layout=w.Layout(width="230px"),
                   style={"description_width": "130px"})  # fmt: skip
        self._boxes = {name: control(name, **box) for name in SHOWN}
        self._boxes["checkpoint_interval"].placeholder = "Young/Daly"
        self._boxes["chip_power"].placeholder = "rated"
        self._boxes["price_per_chip_hour"].placeholder = "none"
        self._message = Message()
        names = list(SHOWN)
        rows = [w.HBox([self._boxes[n] for n in names[i : i + 3]]) for i in range(0, 7, 3)]
        super().__init__([*rows, self._message], **kwargs)
        self.add_class("sw-run-controls")
        for name, scale in SHOWN.items():
            self._bind(self._boxes[name], name, parse=_parser(name), show=_shower(scale))
        self._resync_on()


def _parser(name: str):
    """The box's text as the field reads its flag; an optional box left empty is None."""
    field = FIELDS[name]

    def parse(text: str):
        if name in OPTIONAL and not text.strip():
            return None
        return field.parse(text, field.label)

    return parse


def _shower(scale: float):
    return lambda value: "" if value is None else f"{value * scale:g}"
