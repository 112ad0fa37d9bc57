"""scaling_widgets: how to spread a transformer's training over many chips, as live panels.

The tiers, each a folder or file that says its role, imports pointing down only (lowest first;
``tests/test_tiers.py`` declares the order):

- ``cost/``: the vectorized numpy model. ``evaluate(cluster, workload, layout, options)``
  checks one layout (or a million) and reports it; ``plan`` ranks every layout of a cluster.
- ``presets.py`` and ``catalog.py``: chips and models as data, and reading your own;
  ``measured.py``: published runs and peaks as the model's values.
- ``text/``: units, and the explanations of an estimate written once (CLI text, panel HTML).
- ``fields/``: every field a user sets, declared once (its flag, saved key and panel label), and
  what a change leaves impossible, mended (``fields.mended``).
- ``launch/``: frameworks' launch files, one module a format (``launch/formats/``).
- ``widgets/``: the scenario (shared state), the analysis that evaluates it, one file per widget.
- ``app.py`` (the panel, ``explore``), ``demo/`` (the panel on Voila) and ``cli/``.
"""


def estimate(**keywords):
    """``cost.estimate``, its keywords also in the command line's names and forms: ``fsdp``,
    ``tp``, ``pp``, ``dp``, ``chips``, ``mesh``, ``hardware``, ``batch="4M"``, ``seq_len="8k"``,
    and with the command line's defaults: TPU v5p when no chip is given, sequences of 4,096
    tokens unless ``seq_len`` is given (``seq_len=None``: the chapter's count of tokens alone),
    and, as ``scaling-widgets estimate``, the plan's first row where no keyword sets a layout of
    one's own (``strategy``, ``x``/``fsdp``/``dp``, ``y``/``tp``, ``z``/``pp``, ``zero``,
    ``microbatches``, ...; a recompute policy, EP, CP or schedule given is held by the plan).

    Parameters
    ----------
    **keywords
        The fields of ``Cluster``, ``Workload``, ``Layout`` and ``Options`` by their names
        (``chip``, ``model``, ``batch``, ``x``, ``y``, ``z``, ...) or by the command line's
        (``hardware``, ``fsdp``, ``tp``, ``pp``, ``dp``, ``chips``, ``mesh``); a number may be
        written as the command line writes it ("4M", "8k"). ``model`` and ``batch`` are needed.

    Returns
    -------
    estimate : Estimate
        As ``cost.evaluate`` returns it (times [s], memory [bytes], batch [tokens]).

    Raises
    ------
    ValueError
        Naming the keyword as it was written, for a value out of range or a layout that cannot
        run.

    Examples
    --------
    >>> e = estimate(model="llama-3-70b", hardware="h100", chips=1024, batch="4M", tp=8, mfu=0.4)
    >>> (int(e.x), int(e.y), e.slice_shape)
    (128, 8, (128, 8))
    """
    from .cost import estimate as evaluate_keywords
    from .cost import evaluate
    from .cost.search.plan import as_planned, chooses_layout, scenario_plan
    from .cost.values import split_keywords
    from .fields.keywords import as_given, cost_keywords

    try:
        given = cost_keywords(keywords, defaults=_CLI_DEFAULTS)
        if chooses_layout(given):
            return evaluate_keywords(**given)
        try:
            planned = scenario_plan(split_keywords(given), given)
        except ValueError:  # none fits: the defaults' layout shows by how much
            return evaluate_keywords(**given)
        return as_planned(evaluate(*planned.values(0)), given)
    except ValueError as error:  # named as the user wrote it
        raise as_given(error, keywords) from None


# what the command line and the panel take for these when they are not given
_CLI_DEFAULTS = {"hardware": "tpu-v5p", "seq_len": 4096}
__version__ = "0.1.0"
__all__ = ["Scenario", "estimate", "evaluate", "explore", "plan", "step_trace", "__version__"]


# where each name the package offers lives: each loads on first use, so that importing the
# package, or its command line, costs no more than what is used (the widgets never load for the
# cost layer or the CLI)
_LAZY = {"evaluate": ".cost", "plan": ".cost", "step_trace": ".cost.views.trace",
         "explore": ".app", "Scenario": ".widgets.scenario"}  # fmt: skip


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'scaling_widgets' has no attribute {name!r}")
