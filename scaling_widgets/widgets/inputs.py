"""Inputs made of several controls that show one value (after lonboard's composites): the
global batch as a log slider and a "4M" field (M = 2**20 tokens), and the step's utilisation
given or predicted. Each exposes its ``value`` as one trait, usable on its own or bound to a
scenario's field."""

from __future__ import annotations

import math

import ipywidgets as w
from traitlets import Bool, Float, Unicode, observe

from ..text.units import batch, parse_batch
from ._base import control


class BatchInput(w.HBox):
    """A global batch: a log slider to move it and a field that reads "4M" (4,194,304 tokens:
    K, M and G are powers of two), both showing one value. What the field cannot read is said in
    ``error``, and the value kept.

    Parameters
    ----------
    value : float, default 4,194,304
        The batch to start from [tokens].
    **kwargs
        Passed on to ``ipywidgets.HBox`` (``layout``).

    Attributes
    ----------
    value : float
        The global batch [tokens]; set it, and both controls follow.
    error : str
        Why the last text typed could not be read; "" once one is.
    """

    value = Float(2.0**22)
    error = Unicode("")

    def __init__(self, value: float = 2.0**22, **kwargs):
        self._showing = False
        self._slider = w.FloatLogSlider(
            description="Batch",
            min=3,
            max=9,
            step=0.01,
            base=10,
            readout=False,
            continuous_update=True,
            layout=w.Layout(width="330px"),
        )
        self._text = w.Text(
            description="tokens", continuous_update=False, layout=w.Layout(width="180px")
        )
        super().__init__([self._slider, self._text], **kwargs)
        self._slider.observe(self._on_slider_value, "value")
        self._text.observe(self._on_text_value, "value")
        self.value = value
        self._show()

    @observe("value")
    def _show(self, change=None) -> None:
        self._showing = True
        try:
            self._slider.max = max(9, math.ceil(math.log10(self.value)))
            self._slider.value = self.value
            self._text.value = batch(self.value)
        finally:
            self._showing = False

    def _on_slider_value(self, change) -> None:
        # The slider moves in steps of 10^0.01; within one step of the batch it is not a move
        # of the user's but the browser rounding an exact value (3M) that it cannot show.
        step = abs(math.log10(change["new"]) - math.log10(self.value))
        if not self._showing and step > self._slider.step / 2 + 1e-9:
            self.value = float(change["new"])

    def _on_text_value(self, change) -> None:
        if self._showing:
            return
        try:
            typed = parse_batch(change["new"], "batch")
        except ValueError as err:  # the text stays as typed, to mend; the value is kept
            self.error = str(err)
            return
        self.error = ""
        self.value = typed


class StepInput(w.HBox):
    """The step's utilisation: an MFU given on a slider (the chapter's 40 % to start), or the
    step predicted (``value`` None) with "predict the step" ticked.

    Parameters
    ----------
    **kwargs
        Passed on to ``ipywidgets.HBox`` (``layout``).

    Attributes
    ----------
    value : float or None
        The MFU given, a share of peak; None: the step is predicted.
    locked : bool
        The slider greyed out whatever the value: something else sets the utilisation (a
        measured step).
    """

    value = Float(None, allow_none=True)
    locked = Bool(False)

    def __init__(self, **kwargs):
        self._showing = False
        self._mfu = control(
            "mfu", w.FloatSlider, min=0.01, max=1.0, step=0.01, value=0.4, readout_format=".0%"
        )
        self._predict = w.Checkbox(description="predict the step", indent=False)
        super().__init__([self._mfu, self._predict], **kwargs)
        self._mfu.observe(self._on_mfu_value, "value")
        self._predict.observe(self._on_predict_value, "value")
        self._show()

    @observe("value", "locked")
    def _show(self, change=None) -> None:
        self._showing = True
        try:
            self._predict.value = self.value is None
            if self.value is not None:
                self._mfu.value = self.value
            self._mfu.disabled = self.locked or self.value is None
        finally:
            self._showing = False

    def _on_mfu_value(self, change) -> None:
        # A greyed-out slider is no one's move: the page sends back the value it drew (0.4
        # rounded to the slider's steps, 0.39999999999999997) when it first renders, which must
        # not turn a predicted step into an MFU given.
        if not self._showing and not self._mfu.disabled:
            self.value = float(change["new"])

    def _on_predict_value(self, change) -> None:
        if not self._showing:
            self.value = None if change["new"] else self._mfu.value
