"""The policy engine: features of a change, its risk score and the decision. No I/O.

``config`` reads policy texts into a :class:`~app.policy.config.Policy`; ``diff`` parses
a unified diff; ``features`` measures it; ``score`` turns features (and a session's
checks) into a :class:`~app.policy.score.Score` with its reasons. docs/policy.md is the
reference.
"""
