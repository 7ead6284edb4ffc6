"""The pure core: rules, policies and the engine that applies them. No I/O (a test checks it).

``rule`` says what a rule is (shared by every wire API); ``policy`` maps rules to actions per
upstream and runs them; each wire API has its own sub-package (``chat``: ``messages`` plus its
``rules``).
"""
