"""Answering from the wiki: search and ask."""
