"""The durable queue between a delivery's acknowledgement and its application: SQLite or Redis, the workers, the
sweep.
"""
