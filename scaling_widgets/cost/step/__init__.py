"""The step's formulas: the chapter's step at a utilisation given and the time to train
(``chapter``), what a collective costs on the tier it crosses (``collectives``) and what of it the
compute does not hide (``exposed``), the pipeline's bubble, traffic and busiest stage
(``pipeline``), a schedule's timeline (``timeline``), the chip's measured physics (``physics``),
the profile that composes it with a stack's behaviour (``profiles``), and the whole run (``run``).

Tier 4 of cost/ (``tests/test_tiers.py`` declares the order): it imports from transformer/,
hardware/, the registries and ground/. Like them it knows none of the four values (``values.py``,
above it): the step of a layout is evaluation/'s (``evaluation/step.py``,
``evaluation/predict.py``)."""
