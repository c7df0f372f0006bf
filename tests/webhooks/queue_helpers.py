"""Waiting for the service's real workers: a delivery is answered 202 at once and applied from the queue.

``settle`` waits until the workers ended a delivery (APPLIED or FAILED) and returns its record; there is no
inline mode in production code to wait for instead. A bound on the wait only keeps a broken test from hanging:
nothing asserts how long it took.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.webhooks.deliveries.durable import DeliveryRecord, QueueState
from app.webhooks.service import WEBHOOK_PATH

ENDED = (QueueState.APPLIED, QueueState.FAILED)


def settle(app: FastAPI, delivery_id: str, timeout: float = 30.0) -> DeliveryRecord:
    """The record of ``delivery_id`` once the workers applied or failed it."""
    give_up = time.monotonic() + timeout
    while True:
        record = app.state.queue.record(delivery_id)
        if record is not None and record.state in ENDED:
            assert isinstance(record, DeliveryRecord)
            return record
        if time.monotonic() > give_up:
            raise AssertionError(f"delivery {delivery_id} did not settle: {record}")
        time.sleep(0.01)


def post_settled(client: TestClient, body: bytes, headers: dict[str, str], timeout: float = 30.0) -> DeliveryRecord:
    """Post a delivery that needs a worker: answered 202 ``queued``, then its settled record."""
    response = client.post(WEBHOOK_PATH, content=body, headers=headers)
    delivery_id = headers["x-github-delivery"]
    assert response.status_code == 202, response.text
    assert response.json() == {"delivery": delivery_id, "outcome": "queued"}
    app = client.app
    assert isinstance(app, FastAPI)
    return settle(app, delivery_id, timeout)


def outcome_of(client: TestClient, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """What the old synchronous answer said, read from the settled record: state and outcome."""
    record = post_settled(client, body, headers)
    return {"state": record.state, "outcome": record.outcome, "attempts": record.attempts}


def delivered(client: TestClient, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Post a delivery; one queued is waited for and read from its settled record (``state``, ``outcome``),
    one answered inline is its answer: (status, body)."""
    response = client.post(WEBHOOK_PATH, content=body, headers=headers)
    answer: dict[str, Any] = response.json()
    if response.status_code == 202 and answer.get("outcome") == "queued":
        app = client.app
        assert isinstance(app, FastAPI)
        record = settle(app, headers["x-github-delivery"])
        answer = {**answer, "state": str(record.state), "outcome": record.outcome}
    return response.status_code, answer
