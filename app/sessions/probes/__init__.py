"""Programs that run inside the sandbox, on the repository's own Python: never imported
by the App itself (they import nothing of it; app/sessions/selection.py mounts this
folder read-only). ``module_values`` imports each changed module and prints its values,
for the credential scan; ``patchwarden_tests`` is a pytest plugin that runs only the
chosen tests and can say which functions each reaches.
"""
