"""``interlock serve`` and ``interlock redeliver``: the GitHub App's webhook service, and the deliveries it missed.

``serve`` runs the service (``app/webhooks/service.py``) with the settings of the environment
(``app/webhooks/settings.py``); ``redeliver`` asks GitHub to send again the App's deliveries that failed, which
GitHub never does by itself. Both need the ``service`` extra, whose modules load only when they run.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer


def register(cli: typer.Typer) -> None:
    cli.command("serve")(serve)
    cli.command("redeliver")(redeliver)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
) -> None:
    """Run the GitHub App's webhook service (deliveries at POST /api/github/webhooks)."""
    import uvicorn

    from app.webhooks.service import create_app
    from app.webhooks.settings import settings_from_env

    settings = settings_from_env()
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    uvicorn.run(create_app(settings), host=host, port=port, log_level=settings.log_level)


def redeliver(
    since: Annotated[str, typer.Option(help="How far back to look: 30m, 1h, 2d.")] = "1h",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be redelivered.")] = False,
) -> None:
    """Ask GitHub to redeliver the app's failed webhook deliveries (it never does by itself)."""
    from app.github.client import GitHubApp
    from app.github.redeliver import failed_deliveries, parse_since
    from app.github.redeliver import redeliver as send_again
    from app.webhooks.settings import settings_from_env

    window = parse_since(since)
    app = GitHubApp(settings_from_env().app_identity()).as_app()
    failed = failed_deliveries(app, window)
    for delivery in failed:
        typer.echo(f"{delivery.delivered_at}  {delivery.event:<24} {delivery.guid}  {delivery.status}")
    if not dry_run:
        send_again(app, failed)
    typer.echo(f"{len(failed)} failed deliveries {'found' if dry_run else 'redelivered'} in the last {since}")
