"""The Anthropic Messages API history (``messages`` of ``POST /v1/messages``) and its rules."""
