"""toolcall-guard: a local reverse proxy that keeps tool-calling histories valid."""

__version__ = "0.1.0"
