"""Compare: up to four pinned scenarios side by side, the rows whose numbers differ highlighted,
the table as JSON or CSV to download (``text/compare.py``; the same table as ``scaling-widgets
compare``)."""

from __future__ import annotations

import base64
import html
import json

import ipywidgets as w

from ..text.compare import as_csv, comparison
from ._base import check_kwargs
from .scenario import Scenario

MOST = 4


class Compare(w.VBox):
    """Pin the scenario as it stands; each pin is a frozen copy, evaluated once. ``value`` holds
    the pinned scenarios' JSON, oldest first.

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
    value : list of str
        The pinned scenarios' JSON, oldest first; at most four.
    """

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Compare", kwargs)
        self.scenario = scenario or Scenario()
        self._pins: list[tuple[str, str, object]] = []  # (name, scenario JSON, estimate)
        self._pin = w.Button(description="Pin this scenario", layout=w.Layout(width="auto"))
        self._clear = w.Button(description="Unpin all", layout=w.Layout(width="auto"))
        self._table = w.HTML()
        self._table.add_class("sw-compare-table")
        self._links = w.HTML()
        super().__init__([w.HBox([self._pin, self._clear]), self._table, self._links], **kwargs)
        self.add_class("sw-compare")
        self._pin.on_click(self._on_pin_click)
        self._clear.on_click(self._on_clear_click)
        self._redraw()

    @property
    def value(self) -> list[str]:
        """The pinned scenarios' JSON, oldest first."""
        return [text for _, text, _ in self._pins]

    def pin(self, scenario: Scenario | None = None) -> None:
        """Pin ``scenario`` (default: the panel's), the oldest pin dropped past four.

        Parameters
        ----------
        scenario : Scenario, optional
            The scenario to pin, copied as it stands and evaluated once; None: the widget's
            own.
        """
        text = (scenario or self.scenario).to_json()
        estimate = Scenario.from_json(text).estimate()
        kept = self._pins[-(MOST - 1) :]  # the oldest goes past four
        self._pins = [*kept, (_next_name(kept), text, estimate)]
        self._redraw()

    def _on_pin_click(self, button) -> None:
        try:
            self.pin()
        except ValueError as err:  # a scenario the panel could not evaluate: say so, keep pins
            self._links.value = html.escape(f"Not pinned: {err}")

    def _on_clear_click(self, button) -> None:
        self._pins = []
        self._redraw()

    def _redraw(self) -> None:
        if not self._pins:
            self._table.value = "<i>Pin scenarios to set them side by side (up to four).</i>"
            self._links.value = ""
            return
        table = comparison([e for _, _, e in self._pins], [name for name, _, _ in self._pins])
        self._table.value = _html(table)
        links = []
        for label, kind, text in (
            ("comparison.json", "application/json", json.dumps(table, indent=2)),
            ("comparison.csv", "text/csv", as_csv(table)),
        ):
            data = base64.b64encode(text.encode()).decode()
            links.append(f'<a download="{label}" href="data:{kind};base64,{data}">{label}</a>')
        self._links.value = "Download " + " or ".join(links)


def _next_name(pins) -> str:
    """The first letter no pin has."""
    taken = {name for name, _, _ in pins}
    return next(letter for letter in "ABCDEFGH" if letter not in taken)


def _html(table: dict) -> str:
    head = "".join(f"<th>{html.escape(n)}</th>" for n in table["scenarios"])
    rows = []
    for row in table["rows"]:
        cls = ' class="sw-differs"' if row["differs"] else ""
        cells = "".join(f"<td>{html.escape(s)}</td>" for s in row["shown"])
        rows.append(f"<tr{cls}><th>{html.escape(row['name'])}</th>{cells}</tr>")
    return f"<table><tr><th></th>{head}</tr>{''.join(rows)}</table>"
