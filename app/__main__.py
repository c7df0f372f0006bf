"""``python -m app`` runs the ``interlock`` command."""

from app.cli import main

main()
