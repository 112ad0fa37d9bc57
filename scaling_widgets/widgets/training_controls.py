"""TrainingControls: the global batch (a log slider and a "3M" field), sequence length, MFU,
training tokens and the precision policy."""

from __future__ import annotations

import math

import ipywidgets as w

from ..cost import REMAT_POLICIES
from ..presets import PRECISIONS
from .scenario import Scenario
from ..text.units import parse_count, parse_whole, tokens
from ._base import Bound, Message, check_kwargs


class TrainingControls(Bound, w.VBox):
    """Batch (slider and text show the same value), sequence length, MFU, tokens, precision."""

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("TrainingControls", kwargs)
        self.scenario = scenario or Scenario()
        self._batch = w.FloatLogSlider(
            description="Batch", min=3, max=9, step=0.01, base=10, readout=False, continuous_update=True,
            layout=w.Layout(width="330px"),
        )  # fmt: skip
        self._batch_text = w.Text(description="tokens", continuous_update=False, layout=w.Layout(width="180px"))
        self._seq_len = w.Text(description="Seq length", continuous_update=False, layout=w.Layout(width="180px"))
        self._mfu = w.FloatSlider(description="MFU", min=0.05, max=1.0, step=0.01, readout_format=".0%")
        self._tokens = w.Text(description="Train on", continuous_update=False, layout=w.Layout(width="180px"))
        self._precision = w.Dropdown(description="Precision", options=list(PRECISIONS))
        self._remat = w.Dropdown(description="Recompute", options=list(REMAT_POLICIES))
        self._attention = w.Checkbox(description="count attention FLOPs", indent=False)
        self._measured = w.Text(
            description="Measured step", placeholder="seconds, to calibrate", continuous_update=False,
            layout=w.Layout(width="260px"), style={"description_width": "100px"},
        )  # fmt: skip
        self._message = Message()
        rows = [
            w.HBox([self._batch, self._batch_text]), w.HBox([self._seq_len, self._tokens]),
            w.HBox([self._mfu, self._precision]), w.HBox([self._remat, self._attention]), self._measured,
            self._message,
        ]  # fmt: skip
        super().__init__(rows, **kwargs)
        self.add_class("sw-training-controls")
        self._batch.observe(self._on_batch_change, "value")
        self._batch_text.observe(self._on_batch_text_change, "value")
        self._seq_len.observe(self._on_seq_len_change, "value")
        self._mfu.observe(self._on_mfu_change, "value")
        self._tokens.observe(self._on_tokens_change, "value")
        self._precision.observe(self._on_precision_change, "value")
        self._remat.observe(self._on_remat_change, "value")
        self._attention.observe(self._on_attention_change, "value")
        self._measured.observe(self._on_measured_change, "value")
        fields = ["batch", "seq_len", "mfu", "tokens", "precision", "remat", "attention_flops", "measured_step_time"]
        self.scenario.observe(self._sync, fields)
        self._sync()

    def _show_scenario(self) -> None:
        s = self.scenario
        self._batch.max = max(9, math.ceil(math.log10(s.batch)))
        self._batch.value = s.batch
        self._batch_text.value = tokens(s.batch)
        self._seq_len.value = str(s.seq_len)
        self._mfu.value = s.mfu
        self._tokens.value = tokens(s.tokens)
        self._precision.value = next((k for k, p in PRECISIONS.items() if p == s.precision), None)
        self._remat.value, self._attention.value = s.remat, s.attention_flops
        self._measured.value = "" if s.measured_step_time is None else f"{s.measured_step_time:g}"
        self._mfu.disabled = s.measured_step_time is not None  # calibration derives the MFU instead

    def _on_batch_change(self, change) -> None:
        # The slider moves in steps of 10^0.01; within one step of the batch it is not a move
        # of the user's but the browser rounding an exact value (3M) that it cannot show.
        if abs(math.log10(change["new"]) - math.log10(self.scenario.batch)) > self._batch.step / 2 + 1e-9:
            self._apply(batch=float(change["new"]))

    def _on_batch_text_change(self, change) -> None:
        self._parsed(parse_count, "batch", change["new"])

    def _on_seq_len_change(self, change) -> None:
        self._parsed(parse_whole, "seq_len", change["new"])

    def _on_tokens_change(self, change) -> None:
        self._parsed(parse_count, "tokens", change["new"])

    def _on_mfu_change(self, change) -> None:
        self._apply(mfu=float(change["new"]))

    def _on_precision_change(self, change) -> None:
        if change["new"] is not None:
            self._apply(precision=PRECISIONS[change["new"]])

    def _on_remat_change(self, change) -> None:
        self._apply(remat=change["new"])

    def _on_attention_change(self, change) -> None:
        self._apply(attention_flops=change["new"])

    def _on_measured_change(self, change) -> None:
        if not change["new"].strip():
            self._apply(measured_step_time=None)
        else:
            self._parsed(parse_count, "measured_step_time", change["new"])

    def _parsed(self, parse, field: str, text: str) -> None:
        if self._syncing:
            return
        try:
            value = parse(text, field)
        except ValueError as err:
            self._message.show(str(err))
            self._sync()
            return
        self._apply(**{field: value})
