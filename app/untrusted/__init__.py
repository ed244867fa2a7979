"""Untrusted text (issue titles and bodies, comments, alert payloads) read as GitHub
shows it to a person: ``markdown`` (one markdown-it parse: what is visible, what is a
live command line) and ``sanitize`` (hidden content removed, fenced as data for a
prompt)."""
