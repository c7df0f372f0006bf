"""The GitHub App's webhook service: verify, parse leniently, route one handler per (event, action)."""
