"""Words at the edges: human units, and the explanations of an estimate written once as
structured lines (``explain``), rendered as plain text for the CLI (``report``) or as
HTML/LaTeX for the panel (``lines.html``). The cost model itself holds no sentences.

Tier 5 of the package (``tests/test_tiers.py`` declares the order): it imports from cost/ alone;
fields/, launch/, widgets/ and cli/ above it use its words.
"""
