"""Loopback stub servers for the OpenAI and Anthropic HTTP APIs (test-only code)."""
