"""Memory per chip: the chapter's count, a lower bound, and the busiest chip's peak as a
framework measures it."""
