"""The repository's `prices:` (SPEC P3) travel in every order the service writes, so a job's HTTP agent
estimates its cost with them (tests/runner/test_job_prices.py runs such a job)."""

from __future__ import annotations

import json

from app.webhooks.settings import ServiceSettings
from tests.github.test_flows import REPO, World


def test_the_service_writes_the_repositorys_prices_into_every_order(settings: ServiceSettings) -> None:
    world = World(settings)
    config = "base: develop\ndefault_graph: small\nprices: {house-model: {input: 2, output: 10}}\n"
    world.fake.commit_file(REPO, "main", ".github/interlock.yml", config)
    _, issue = world.label()
    order = json.loads(world.fake.logical_files(REPO, "interlock/state")[f"runs/issue-{issue}/orders/0001-build.json"])
    assert order["prices"] == {"house-model": {"input": 2.0, "output": 10.0}}
    assert world.fake.problems == []
