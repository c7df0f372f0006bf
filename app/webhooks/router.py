"""One handler per (event, action), looked up in a table, so the order of things is plain to read.

A handler receives the delivery and returns an ``Outcome``; it raises to say the delivery failed (the
service then answers 5xx and GitHub's redelivery, requested by ``interlock redeliver``, retries it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import StrEnum

from app.webhooks.delivery import Delivery

log = logging.getLogger("interlock.webhooks")


class Outcome(StrEnum):
    HANDLED = "handled"
    IGNORED = "ignored"  # an event or action Interlock does not act on
    OWN = "own"  # caused by the app itself
    DUPLICATE = "duplicate"  # a delivery id this replica already processed


Handler = Callable[[Delivery], Outcome]


class Router:
    def __init__(self, app_slug: str | None = None) -> None:
        self.handlers: dict[tuple[str, str | None], Handler] = {}
        self.inline: set[Handler] = set()
        self.takes_own: set[Handler] = set()
        self.app_slug = app_slug
        # which content limiter the handlers' GitHub client uses, for /healthz; a router that calls no GitHub
        # keeps none but its own process's
        self.limiter_status: Callable[[], str] = lambda: "in-process"

    def on(
        self, event: str, action: str | None = None, *, inline: bool = False, own: bool = False
    ) -> Callable[[Handler], Handler]:
        """Register a handler. ``inline`` handlers do no I/O and are answered on the event loop with their
        outcome; the others are queued durably, answered 202, and applied later by a worker thread
        (app/webhooks/deliveries/workers.py), with no deadline of GitHub's on them. ``own`` handlers also receive
        the events the App caused, and must tell by themselves which of those count."""

        def register(handler: Handler) -> Handler:
            key = (event, action)
            if key in self.handlers:
                raise ValueError(f"a handler for {event}.{action} is already registered")
            self.handlers[key] = handler
            if inline:
                self.inline.add(handler)
            if own:
                self.takes_own.add(handler)
            return handler

        return register

    def needs_worker(self, delivery: Delivery) -> bool:
        """Whether dispatching ``delivery`` may block: only a registered, non-inline handler for it may."""
        handler = self._handler_taking(delivery)
        return handler is not None and handler not in self.inline

    def handler_for(self, delivery: Delivery) -> Handler | None:
        return self.handlers.get((delivery.event, delivery.action)) or self.handlers.get((delivery.event, None))

    def dispatch(self, delivery: Delivery) -> Outcome:
        handler = self._handler_taking(delivery)
        if handler is None:
            return Outcome.OWN if self.is_own(delivery) else Outcome.IGNORED
        return handler(delivery)

    def _handler_taking(self, delivery: Delivery) -> Handler | None:
        """The handler for ``delivery``; none for an event the App caused, unless its handler takes those."""
        handler = self.handler_for(delivery)
        return None if self.is_own(delivery) and handler not in self.takes_own else handler

    def is_own(self, delivery: Delivery) -> bool:
        """Events the app caused itself (its bot user is the sender) never drive a run — except the end of a
        job: the app dispatched it, so GitHub names the app as the sender of its ``workflow_run``; and those a
        handler registered with ``own`` takes (the App's close of an upstream request it filed)."""
        if delivery.event == "workflow_run" or not self.app_slug:
            return False
        return delivery.sender_is_bot and delivery.sender == f"{self.app_slug}[bot]"


def default_router(app_slug: str | None = None) -> Router:
    """The handlers that need no GitHub call: the ping a new webhook receives, and installation events."""
    router = Router(app_slug)

    @router.on("ping", inline=True)
    def ping(delivery: Delivery) -> Outcome:
        log.info("ping %s: %s", delivery.delivery_id, delivery.payload.get("zen", ""))
        return Outcome.HANDLED

    for event in ("installation", "installation_repositories"):

        @router.on(event, inline=True)
        def installation(delivery: Delivery) -> Outcome:
            log.info("installation event %s by %s", delivery.describe(), delivery.sender)
            return Outcome.HANDLED

    return router
