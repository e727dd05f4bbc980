"""Reading and undoing history: the history view, revert, retract."""
