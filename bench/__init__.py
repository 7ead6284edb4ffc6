"""Benchmarks, run by ``make bench`` (``python -m bench``)."""
