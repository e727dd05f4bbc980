"""Agents' memory: daily logs, hooks, and their consolidation into topic pages."""
