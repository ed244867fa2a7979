"""Programs that run inside the sandbox, on the repository's own Python: never imported
by the App itself (they import nothing of it). The session mounts this folder read-only
and runs them: ``module_values`` (each changed module's values, for the credential scan)
and ``patchwarden_reach`` (a pytest plugin: which functions the chosen tests reach).
"""
