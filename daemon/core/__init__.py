"""Foundations every room uses: the config object, the exception tree, atomic file writes, locks,
SQLite, the vault's layout and path safety.
"""
