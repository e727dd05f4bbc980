"""wikiwright: keep an LLM-maintained markdown wiki up to date, one git commit per change."""

__version__ = "0.1.0"
