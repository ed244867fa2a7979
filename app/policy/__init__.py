"""The policy engine: features of a change, its risk score and the decision. No I/O.

``policy_model`` reads policy texts into a :class:`~app.policy.policy_model.Policy`;
``diff`` parses a unified diff; ``features`` measures it; ``score`` runs the factors
(``factors``, ``checked``) over features and a session's checks into a
:class:`~app.policy.score.Score` with its reasons; ``learn`` is earned autonomy,
``watch_rules`` the watch's. docs/policy.md is the reference.
"""
