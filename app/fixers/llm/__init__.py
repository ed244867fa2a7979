"""The ``llm`` fixer: a coding agent with a small tool set, on any OpenAI-compatible
endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio)."""
