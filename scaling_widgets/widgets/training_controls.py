"""TrainingControls: the global batch (a log slider and a "3M" field), sequence length, the step
(an MFU given, or predicted, MODEL.md §C), training tokens, the precision policy, a measured step,
the software stack whose memory the peak counts and a measured peak that calibrates it (MODEL.md
§E.2)."""

from __future__ import annotations

import html

import ipywidgets as w

from ..catalog import name_of
from ..cost.calibrate import calibrate, calibrate_memory
from ..cost.step.profiles import TAKEN_IN, default_stack
from ..cost.transformer.counts import REMAT_POLICIES
from ..cost.transformer.recompute import offered
from ..presets import PRECISIONS
from ..text.units import parse_count, parse_whole, tokens
from ._base import Bound, Message, check_kwargs, control
from .inputs import BatchInput, StepInput
from .scenario import Scenario


class TrainingControls(Bound, w.VBox):
    """Batch (slider and text show the same value), sequence length, MFU, tokens, precision.

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
        check_kwargs("TrainingControls", kwargs)
        self.scenario = scenario or Scenario()
        self._message = Message()
        rows = [
            *self._workload_rows(),
            *self._step_rows(),
            *self._stack_rows(),
            *self._calibration_rows(),
            self._message,
        ]
        super().__init__(rows, **kwargs)
        self.add_class("sw-training-controls")
        self._resync_on("measured_step_time", "profile", "hardware")

    def _workload_rows(self) -> list:
        """The batch (a log slider and a "3M" field showing one value), the sequence length and
        the tokens to train."""
        self._batch = BatchInput()
        self._seq_len = control("seq_len", w.Text, **_text())
        self._tokens = control("tokens", w.Text, **_text())
        self._batch.observe(self._on_batch_error, "error")
        self._bind(self._batch, "batch")
        self._bind(self._seq_len, "seq_len", parse=_parser(parse_whole, "seq_len"), show=str)
        self._bind(self._tokens, "tokens", parse=_parser(parse_count, "tokens"), show=tokens)
        return [self._batch, w.HBox([self._seq_len, self._tokens])]

    def _step_rows(self) -> list:
        """The step: predicted, or at an MFU given (40 %, the chapter's, one click away); the
        precision, the recompute policy and whether attention's FLOPs count."""
        self._step = StepInput()
        self._precision = control("precision")
        self._remat = control("remat", w.Dropdown, options=REMAT_POLICIES)
        self._compile = _stacks_own(control("torch_compile"))
        self._attention = control("attention_flops")
        self._bind(self._step, "mfu")
        self._bind(
            self._precision,
            "precision",
            parse=PRECISIONS.__getitem__,
            show=lambda p: name_of(p, PRECISIONS),
        )
        self._bind(self._remat, "remat")
        self._bind(self._compile, "torch_compile", parse=_SWITCH.__getitem__, show=_switch_word)
        self._bind(self._attention, "attention_flops")
        return [
            w.HBox([self._step, self._precision]),
            w.HBox([self._remat, self._compile, self._attention]),
        ]

    def _stack_rows(self) -> list:
        """The software stack (the chip's unless named), flash attention and the matmuls' dtype."""
        self._stack = control("stack")
        self._stack.options = [("the chip's", ""), *self._stack.options]
        self._flash = _stacks_own(control("flash_attention"))
        self._dtype = control("matmul_dtype")
        self._bind(
            self._stack, "stack", parse=lambda name: name or None, show=lambda name: name or ""
        )
        self._bind(self._flash, "flash_attention", parse=_SWITCH.__getitem__, show=_switch_word)
        self._bind(self._dtype, "matmul_dtype")
        return [w.HBox([self._stack, self._flash, self._dtype])]

    def _calibration_rows(self) -> list:
        """A measured step and a measured peak that calibrate the profile, the profile in use,
        and the way back to the chip's own."""
        measured = dict(
            continuous_update=False,
            layout=w.Layout(width="260px"),
            style={"description_width": "100px"},
        )
        self._measured = w.Text(
            description="Measured step", placeholder="seconds, to calibrate", **measured
        )
        self._measured_peak = w.Text(
            description="Measured peak", placeholder="GB, as the stack reports it", **measured
        )
        self._profile = w.HTML()
        self._forget = w.Button(description="use the chip's profile", layout=w.Layout(width="auto"))
        self._measured.observe(self._on_measured_change, "value")
        self._measured_peak.observe(self._on_measured_peak_change, "value")
        self._forget.on_click(lambda button: self._apply(profile=None))
        return [w.HBox([self._measured, self._forget]), self._measured_peak, self._profile]

    def _show_scenario(self) -> None:
        s = self.scenario
        # the stack's own recompute policies, and the one in use if a file or the API set another
        named = offered(s.stack or default_stack(s.hardware))
        self._remat.options = (*named, *(() if s.remat in named else (s.remat,)))
        super()._show_scenario()
        self._measured.value = "" if s.measured_step_time is None else f"{s.measured_step_time:g}"
        self._step.locked = s.measured_step_time is not None  # the MFU it implies, instead
        self._forget.layout.display = "" if s.profile is not None else "none"
        self._profile.value = (
            "" if s.profile is None else f"Predicting with <i>{html.escape(s.profile.name)}</i>."
        )
        self._measured.placeholder = (
            "seconds: calibrate the profile" if s.mfu is None else "seconds: implied MFU"
        )

    def _on_measured_change(self, change) -> None:
        """A measured step: with the step predicted, it calibrates the profile every what-if after
        uses (MODEL.md §C.3); with an MFU given, it reports the MFU it implies."""
        if self._syncing:
            return
        try:
            seconds = _measured(change["new"])
            if seconds is not None and self.scenario.mfu is None:
                profile = calibrate(*self.scenario.values(), step_time=seconds)
                self._apply(profile=profile, measured_step_time=None)
                return
        except ValueError as err:
            self._message.show(str(err))
            self._sync()
            return
        self._apply(measured_step_time=seconds)

    def _on_measured_peak_change(self, change) -> None:
        """A measured peak calibrates the memory of the profile every what-if after uses (MODEL.md
        §E.2): the stack's choices go into that profile."""
        if self._syncing or not change["new"].strip():
            return
        try:
            peak = parse_count(change["new"], "measured_peak") * 1e9
            profile = calibrate_memory(*self.scenario.values(), peak_bytes=peak)
        except ValueError as err:
            self._message.show(str(err))
            return
        self._measured_peak.value = ""
        self._apply(profile=profile, **TAKEN_IN)

    def _on_batch_error(self, change) -> None:
        """A batch typed that does not read: said here; one that does clears it."""
        if change["new"]:
            self._message.show(change["new"])
        else:
            self._message.clear()


def _text() -> dict:
    """A short text field's settings (a layout of its own: widgets share none)."""
    return dict(continuous_update=False, layout=w.Layout(width="180px"))


_SWITCH = {"": None, "on": True, "off": False}  # a switch that may be left to the stack


def _switch_word(on) -> str:
    return "" if on is None else "on" if on else "off"


def _stacks_own(dropdown):
    """A switch's dropdown, with "the stack's" (None) first."""
    dropdown.options = [("the stack's", ""), *dropdown.options]
    return dropdown


def _parser(parse, field: str):
    return lambda text: parse(text, field)


def _measured(text: str):
    """Seconds, or nothing: an empty field clears the calibration."""
    return None if not text.strip() else parse_count(text, "measured_step_time")
