"""Memory per chip: the chapter's count, a lower bound, and the busiest chip's peak as a
framework measures it.

Tier 7 of cost/ (``tests/test_tiers.py`` declares the order): it reads the four values and a placed
layout, so it sits above layout/ and imports from there and the tiers below; evaluation/ composes
it.
"""
