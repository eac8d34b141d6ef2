"""Scheduling primitives, one module per family: loop, attach, cache, annotate."""
