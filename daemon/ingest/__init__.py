"""From a source to page changes: routing, the offline engine, the model client and planner, the
operation checks, the pipeline.
"""
