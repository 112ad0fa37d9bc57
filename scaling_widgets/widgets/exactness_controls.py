"""ExactnessControls: the corrections the chapter leaves out (MODEL.md §B.7) and a cautious "fits"
(B.8)."""

from __future__ import annotations

import ipywidgets as w

from ..text.units import parse_count
from ._base import Bound, Message, check_kwargs, control
from .scenario import Scenario


class ExactnessControls(Bound, w.VBox):
    """Ring factor, halved bandwidth without wraparound, latency per collective, runtime
    memory overhead and the share of HBM a layout may fill. All off: the chapter's model.

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
        check_kwargs("ExactnessControls", kwargs)
        self.scenario = scenario or Scenario()
        self._ring, self._halve = control("ring_factor"), control("halve_without_wrap")
        text = dict(widget=w.Text, continuous_update=False, layout=w.Layout(width="200px"))
        self._latency, self._overhead = (
            control("latency", **text),
            control("overhead_bytes", **text),
        )
        self._fits_below = control(
            "fits_below", w.FloatSlider, min=0.01, max=1.0, step=0.01, readout_format=".0%"
        )
        self._message = Message()
        rows = [
            w.HBox([self._ring, self._halve]),
            w.HBox([self._latency, self._overhead]),
            self._fits_below,
        ]
        super().__init__([*rows, self._message], **kwargs)
        self.add_class("sw-exactness-controls")
        self._bind(self._ring, "ring_factor")
        self._bind(self._halve, "halve_without_wrap")
        self._bind(
            self._latency, "latency", parse=_scaled("latency", 1e-6), show=lambda v: f"{v * 1e6:g}"
        )
        gb = _scaled("overhead_bytes", 1e9)
        self._bind(self._overhead, "overhead_bytes", parse=gb, show=lambda v: f"{v / 1e9:g}")
        self._bind(self._fits_below, "fits_below", parse=float)
        self._resync_on()


def _scaled(field: str, unit: float):
    """Text in the field's display unit (µs, GB) to SI; empty or 0 is none."""

    def parse(text: str) -> float:
        return 0.0 if text.strip() in ("", "0") else parse_count(text, field) * unit

    return parse
