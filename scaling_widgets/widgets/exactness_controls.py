"""ExactnessControls: the corrections the chapter leaves out (SPEC B.7) and a cautious "fits" (B.8)."""

from __future__ import annotations

import ipywidgets as w

from .scenario import Scenario
from ..text.units import parse_count
from ._base import Bound, Message, check_kwargs


class ExactnessControls(Bound, w.VBox):
    """Ring factor, halved bandwidth without wraparound, latency per collective, runtime
    memory overhead and the share of HBM a layout may fill. All off: the chapter's model."""

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("ExactnessControls", kwargs)
        self.scenario = scenario or Scenario()
        self._ring = w.Checkbox(description="ring factor (n-1)/n", indent=False)
        self._halve = w.Checkbox(description="halve bandwidth without wraparound", indent=False)
        self._latency = w.Text(description="latency (µs)", continuous_update=False, layout=w.Layout(width="200px"))
        self._overhead = w.Text(description="overhead (GB)", continuous_update=False, layout=w.Layout(width="200px"))
        self._fits_below = w.FloatSlider(description="fits below", min=0.5, max=1.0, step=0.01, readout_format=".0%")
        self._message = Message()
        rows = [w.HBox([self._ring, self._halve]), w.HBox([self._latency, self._overhead]), self._fits_below]
        super().__init__([*rows, self._message], **kwargs)
        self.add_class("sw-exactness-controls")
        self._ring.observe(self._on_ring_change, "value")
        self._halve.observe(self._on_halve_change, "value")
        self._latency.observe(self._on_latency_change, "value")
        self._overhead.observe(self._on_overhead_change, "value")
        self._fits_below.observe(self._on_fits_below_change, "value")
        self.scenario.observe(
            self._sync, ["ring_factor", "halve_without_wrap", "latency", "overhead_bytes", "fits_below"]
        )
        self._sync()

    def _show_scenario(self) -> None:
        s = self.scenario
        self._ring.value, self._halve.value = s.ring_factor, s.halve_without_wrap
        self._latency.value = f"{s.latency * 1e6:g}"
        self._overhead.value = f"{s.overhead_bytes / 1e9:g}"
        self._fits_below.value = s.fits_below

    def _on_ring_change(self, change) -> None:
        self._apply(ring_factor=change["new"])

    def _on_halve_change(self, change) -> None:
        self._apply(halve_without_wrap=change["new"])

    def _on_latency_change(self, change) -> None:
        self._number("latency", change["new"], 1e-6)

    def _on_overhead_change(self, change) -> None:
        self._number("overhead_bytes", change["new"], 1e9)

    def _on_fits_below_change(self, change) -> None:
        self._apply(fits_below=float(change["new"]))

    def _number(self, field: str, text: str, unit: float) -> None:
        if self._syncing:
            return
        try:
            value = 0.0 if text.strip() in ("", "0") else parse_count(text, field) * unit
        except ValueError as err:
            self._message.show(str(err))
            self._sync()
            return
        self._apply(**{field: value})
