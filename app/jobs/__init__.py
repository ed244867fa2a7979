"""The jobs that turn a request into a pull request, and a pull request into a merge.

One module per kind of job (as ``app/webhooks/`` has one per kind of event):

- ``fix``, ``alert`` (with the canary), ``revert``, ``update``: the sessions queue.
  Each builds its task and fixer, then :mod:`app.jobs.to_pull` runs the session,
  scores it with the policy from the base branch and publishes the outcome;
- ``merge``: the events queue, one job per event that may let a pull request merge;
- ``failure_notice``: tells the person who asked that a job failed for good.

:mod:`app.contract.kinds` (below this room) types every job's payload;
:mod:`app.jobs.context` holds what every job needs; :mod:`app.runtime` (above it) wires a
process (store, GitHub, workers) and maps each kind to its job.
Every job records its :class:`~app.store.Outcome`; every decision is audited.
"""
