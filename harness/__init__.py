"""Local servers that speak real protocols (OpenAI chat, SerpAPI), the scripted LLM and the app as a child process:
shared by the tests and the benchmarks."""
