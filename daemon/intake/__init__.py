"""How a file enters: the watcher and rescans, the durable queue and source ledger, reading and
decoding sources.
"""
