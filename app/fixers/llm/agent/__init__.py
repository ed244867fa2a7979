"""The llm fixer's ``agent`` strategy: a tool loop (read, search, edit, run, finish)
with forgiving edits and small models' dialects, for models that can plan."""
