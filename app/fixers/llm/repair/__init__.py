"""The llm fixer's ``repair`` strategy: localise, reproduce, sample whole functions,
validate in the sandbox, choose (:mod:`.fixer`)."""
