"""Child processes this project starts (the embedded LLM server, the server's prepare command, a test server)."""
