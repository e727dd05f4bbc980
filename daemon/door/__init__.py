"""The one door every change to the vault passes through: write lock, the person's edits first,
compare-and-swap writes, one commit, the ledger.
"""
