"""Publishing: what Patchwarden writes to GitHub — branches and commits, pull requests
and their bodies, labels, check runs, closing comments — with the pure decision of
whether a pull request may merge (``merge_decision.py``), and the audit page that
reads the store. Only this room and ``app/github`` write to GitHub."""
