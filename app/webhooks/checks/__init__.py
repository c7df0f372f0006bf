"""The run's check run, its buttons, and when the status comment is edited."""
