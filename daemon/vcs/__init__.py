"""Git, driven through its command layer: commits with trailers, the person's edits committed
first, merges.
"""
