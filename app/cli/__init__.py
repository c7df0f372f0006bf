"""The `interlock` command: one module per command group, each registering its commands on the one typer app."""
