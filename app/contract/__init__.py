"""The contract between the intake, the webhook handlers and the jobs: the typed job
kinds they queue (:mod:`kinds`) and the pure lifecycle rules they may consult
(:mod:`lifecycle_rules`). Below both ``app/webhooks/`` and ``app/jobs/``."""
