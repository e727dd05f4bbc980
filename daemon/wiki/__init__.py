"""The pages themselves: parsing and rendering, the catalogue and full-text search, index.md and
log.md, compare-and-swap writes.
"""
