"""The chat-completions history (``messages``) and its rules."""
