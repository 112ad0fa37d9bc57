"""What every widget here shares: strict constructor keywords and an inline message."""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as w
from traitlets import TraitError, dlink

from ..cost.ground.checks import Switch
from ..fields import FIELDS
from ..text.units import parse_whole
from .analysis import Analysis
from .scenario import Scenario
from .theme import css_color

# FSDP/data, tensor, pipeline (theme names)
ROLE_COLORS = {"x": "blue", "y": "orange", "z": "green"}


def check_kwargs(owner: str, kwargs: dict, allowed=("layout",)) -> None:
    """Unknown constructor keywords raise (traitlets would only warn).

    Parameters
    ----------
    owner : str
        The widget's class name, as the message names it.
    kwargs : dict
        The keywords the constructor was given besides ``scenario``.
    allowed : tuple of str, default ("layout",)
        The keywords the constructor passes on to ipywidgets.

    Raises
    ------
    TypeError
        For a keyword not in ``allowed``; the message names the first in sorted order.
    """
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(
            f"{owner}() got an unexpected keyword argument {unknown[0]!r}; allowed: scenario, "
            f"{', '.join(allowed)}"
        )


def control(name: str, widget=None, **kwargs) -> w.ValueWidget:
    """The panel's control of a field: its kind, label and choices from the table of fields
    (``fields/``); ``widget`` chooses another kind (toggle buttons for a strategy).

    Parameters
    ----------
    name : str
        The field's name, a key of ``FIELDS``.
    widget : type, optional
        The ipywidgets class to make. None: a ``Checkbox`` for a switch, a ``Dropdown`` for a
        field with choices, an ``IntText`` for a whole number, else a ``Text``.
    **kwargs
        More keywords for the widget; an ``options`` given replaces the field's choices.

    Returns
    -------
    control : ipywidgets.ValueWidget
        The control, labelled with the field's label; not yet bound to a scenario.
    """
    field = FIELDS[name]
    if field.switch or isinstance(field.checker(), Switch):
        return (widget or w.Checkbox)(description=field.label, indent=False, **kwargs)
    if field.choices is not None:
        shown = field.choice_labels or {}
        kwargs.setdefault("options", [(shown.get(c, str(c)), c) for c in field.choices])
        return (widget or w.Dropdown)(description=field.label, **kwargs)
    whole = field.parse is parse_whole
    return (widget or (w.IntText if whole else w.Text))(description=field.label, **kwargs)


class Message(w.HTML):
    """An inline message under a control: empty and hidden until something is wrong.

    Attributes
    ----------
    text : str
        The message on show, as plain text; empty when none is.
    """

    text = ""  # the message as plain text

    def __init__(self):
        super().__init__("")
        self.add_class("sw-error")
        self.layout.display = "none"

    def show(self, text: str) -> None:
        """Show ``text`` as a warning under the control.

        Parameters
        ----------
        text : str
            The message, as plain text (escaped into the HTML).
        """
        self.text = text
        self.value = f'<span style="color:{css_color("error")}">&#9888; {html.escape(text)}</span>'
        self.layout.display = ""

    def clear(self) -> None:
        """Empty the message and hide it."""
        self.text, self.value, self.layout.display = "", "", "none"


def vertical_axis(scale, **kwargs) -> bq.Axis:
    """A y axis on the left; bqplot 0.12 (Colab) also needs the orientation trait that 0.13
    dropped.

    Parameters
    ----------
    scale : bqplot.Scale
        The axis's scale, the y scale of the figure's marks.
    **kwargs
        More keywords for ``bqplot.Axis`` (``label``, ``tick_format``, ...).

    Returns
    -------
    axis : bqplot.Axis
        The vertical axis.
    """
    axis = bq.Axis(scale=scale, side="left", **kwargs)
    if "orientation" in axis.trait_names():
        axis.orientation = "vertical"
    return axis


class Bound:
    """Base of the controls bound to a scenario: the wiring, the parsing, the inline message and
    the resync, once for every control.

    ``_bind(child, field, parse, show)`` ties a child widget to a scenario field: a change of the
    child is parsed (a ``ValueError`` shows its message) and applied to the scenario whole or not
    at all; a refusal shows the message and puts every child back to what the scenario holds.
    ``_resync_on()`` then keeps the children in step with those fields.

    Attributes
    ----------
    scenario : Scenario
        The scenario the controls write to and show.
    """

    scenario: Scenario
    _message: Message
    _syncing = False
    _bindings: tuple = ()  # (child, field, show) of each bound child, replaced whole

    def _bind(self, child, field: str, parse=None, show=None) -> None:
        """Tie ``child.value`` to the scenario's ``field`` (``parse``: child -> field; ``show``:
        back)."""
        if not self._bindings:  # once: any change applied clears a stale error
            self.scenario.observe(lambda change: self._message.clear(), "revision")
        self._bindings = (*self._bindings, (child, field, show or (lambda value: value)))

        def on_change(change):
            if self._syncing:
                return
            try:
                value = change["new"] if parse is None else parse(change["new"])
            except ValueError as err:  # the text stays as typed, to mend; the scenario is kept
                self._message.show(str(err))
                return
            self._apply(**{field: value})

        child.observe(on_change, "value")

    def _resync_on(self, *more_fields: str) -> None:
        """Resync the children whenever a bound field (or one of ``more_fields``) changes."""
        fields = [field for _, field, _ in self._bindings] + list(more_fields)
        self.scenario.observe(self._sync, fields)
        self._sync()

    def _apply(self, **changes) -> bool:
        """Write to the scenario; on a bad value show the message and put the controls back."""
        if self._syncing:
            return False  # our own echo while copying the scenario into the controls
        changes = {k: v for k, v in changes.items() if getattr(self.scenario, k) != v}
        if not changes:  # a value typed back to what holds: valid, so the error goes
            self._message.clear()
            return True
        try:
            self.scenario.update(**changes)
        except TraitError as err:
            self._message.show(str(err))
            self._sync()
            return False
        self._message.clear()
        return True

    def _sync(self, change=None) -> None:
        self._syncing = True
        try:
            self._show_scenario()
        finally:
            self._syncing = False

    def _show_scenario(self) -> None:
        """Show the scenario in the bound children; a control with more to show extends this."""
        for child, field, show in self._bindings:
            child.value = show(getattr(self.scenario, field))


class EstimateFigure(bq.Figure):
    """A figure that draws a scenario's current estimate (``Analysis.estimate``) as ``data``: the
    wiring, the margins and the stable CSS class, once for every such figure.

    Parameters
    ----------
    scenario : Scenario or None
        The scenario whose estimate the figure follows; None: none, ``data`` is set by hand.
    css_class : str
        The figure's CSS class ("sw-step-breakdown", ...).
    marks : list of bqplot.Mark
        The figure's marks.
    axes : list of bqplot.Axis
        The figure's axes.
    title : str
        The title until the first draw.
    height : str
        The figure's CSS height ("160px").

    Attributes
    ----------
    data : Estimate or None
        The estimate drawn (a subclass declares the trait): ``Analysis.estimate`` of
        ``scenario``.
    """

    def __init__(self, scenario, css_class: str, marks, axes, title: str, height: str):
        super().__init__(
            marks=marks,
            axes=axes,
            title=title,
            fig_margin=dict(top=40, bottom=40, left=50, right=20),
            layout=w.Layout(width="100%", min_width="300px", height=height),
        )
        self.add_class(css_class)
        if scenario is not None:
            dlink((Analysis.of(scenario), "estimate"), (self, "data"))
