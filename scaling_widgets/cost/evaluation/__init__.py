"""``evaluate()``: the one path from the four values to everything MODEL.md §A.10 reports
(``evaluate``), composed of the layer of a placed layout (``layer``), its memory (memory/) and its
step (``step``, ``predict``) into an ``Estimate`` (``result``); a large grid runs in blocks
(``blocks``).

Tier 8 of cost/ (``tests/test_tiers.py`` declares the order): it imports from every tier below it;
search/, views/, calibrate.py and compare.py build on it."""
