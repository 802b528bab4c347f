"""Checks on what an LLM wrote: answers against the evidence (citations, quotes, quantities), streamed answers,
prompt-injection and leak guards, tolerant JSON parsing, and what the evidence does not settle."""
