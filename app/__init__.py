"""Interlock: deterministic multi-agent workflows that live on GitHub."""

__version__ = "0.1.0"
