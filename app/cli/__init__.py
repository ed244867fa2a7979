"""The ``patchwarden`` command: ``main.py`` (the parser and the service verbs: serve,
worker, audit, pause, manifest ...) and one module per verb that does more than call
the service: ``run.py`` (a session on a local repository), ``score_verb.py`` (a diff or
a git range through the policy), ``doctor.py`` (what this machine has), ``demo.py`` (the
whole story on the local GitHub double), ``setup.py`` (an App from the manifest)."""

from app.cli.main import main

__all__ = ["main"]
