"""The `interlock` command: one module per command group, each registering its commands on the one typer app that
``app/cli/assemble.py`` builds.

``main`` here is the console script's entry point, ``interlock = "app.cli:main"`` as it was before the command
line was a package, so an install made before keeps working after a pull; it builds the app on its first call, so
importing the package stays light.
"""

from typing import NoReturn


def main() -> NoReturn:
    from app.cli.assemble import main as run  # built when the command runs, not on import

    run()
