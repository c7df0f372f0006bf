"""``python -m app`` runs the ``interlock`` command."""

from app.cli.main import main

main()
