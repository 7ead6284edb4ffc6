"""The Responses API history (``input`` items) and its rules."""
