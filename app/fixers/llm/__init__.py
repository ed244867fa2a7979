"""The ``llm`` fixer, on any OpenAI-compatible endpoint (OpenAI, Azure OpenAI, vLLM,
Ollama, llama.cpp's server, LM Studio), in two strategies (``strategy.py``): ``repair``
for small models (the system localizes, reproduces, samples and validates; the model
only writes code) and ``agent``, a tool loop for strong ones."""
