"""Keeping the wiki healthy: lint, the review queue in REVIEW.md, doctor."""
