"""Coding sessions: workspace cache, sandbox backends, verification, ``SessionResult``.

A session turns a job into a verified, typed result. It never talks to GitHub: git
fetches go through :mod:`app.sessions.workspace` with credentials kept out of URLs and
argv, and everything that touches the repository's code runs in a sandbox
(:mod:`app.sessions.sandbox`).
"""
