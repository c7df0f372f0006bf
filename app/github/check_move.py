"""The run's check moved to a new head in one request: GraphQL's ``createCheckRun`` and ``updateCheckRun`` together.

Why: when a mission's commits move the run branch's head, the check goes on there (a pull request shows its head's
checks only) and the one left in progress on the earlier commit is marked as moved on. Through REST that is a POST
and a PATCH, two of the 80 content-creating requests a minute and 500 an hour GitHub allows an App, which count
requests (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits).
One GraphQL request carries both mutations; GitHub runs them in order, the new check first, and answers each on
its own: the old check's update failing (deleted since) loses nothing, the new check's failing raises.

GraphQL names things by node id: the repository's is read with every run record (``Snapshot.repository_id``), a
check's is in GitHub's answer when it is made (REST's ``node_id``, GraphQL's ``id``).
https://docs.github.com/en/graphql/reference/mutations#createcheckrun
https://docs.github.com/en/graphql/reference/mutations#updatecheckrun
"""

from __future__ import annotations

import logging
from typing import Any

from githubkit.exception import GraphQLFailed, RequestFailed
from pydantic import ValidationError

from app.github.checks import CHECK_NAME, CheckView, MadeCheck
from app.github.client import GitHubError, Installation

log = logging.getLogger("interlock.github")
MOVE_CHECK = (
    "mutation InterlockMoveCheck($made: CreateCheckRunInput!, $left: UpdateCheckRunInput!) { "
    "made: createCheckRun(input: $made) { checkRun { databaseId id } } "
    "left: updateCheckRun(input: $left) { checkRun { databaseId } } }"
)
WHERE = "/graphql createCheckRun"


def graphql_fields(view: CheckView) -> dict[str, Any]:
    """``view`` as GraphQL's check inputs take it: the REST fields' names in camel case, enums in capitals."""
    fields: dict[str, Any] = {
        "status": view.status.upper(),
        "detailsUrl": view.details_url,
        "output": {"title": view.title, "summary": view.summary},
        "actions": [{"label": a.label, "identifier": a.identifier, "description": a.description} for a in view.actions],
    }
    if view.conclusion is not None:
        fields["conclusion"] = view.conclusion.upper()
    return fields


def move_check(
    api: Installation, repository: str, head: str, external_id: str, view: CheckView, left: str, left_view: CheckView
) -> MadeCheck:
    """The check made on ``head`` showing ``view``; the check ``left`` (a node id) updated to ``left_view`` in the
    same request. ``repository`` is the repository's node id. ``GitHubError`` when the new check was not made: 403
    when the installation may not write checks, else 422, so that the caller reads what GitHub shows."""
    made = {"repositoryId": repository, "headSha": head, "name": CHECK_NAME, "externalId": external_id}
    variables = {
        "made": {**made, **graphql_fields(view)},
        "left": {"repositoryId": repository, "checkRunId": left, **graphql_fields(left_view)},
    }
    try:
        data: dict[str, Any] = api.github.graphql(MOVE_CHECK, variables)
    except GraphQLFailed as exc:
        data = exc.response.data or {}
        errors = exc.response.errors or []
        if not _made(data):
            text = "; ".join(error.message for error in errors)[:300]
            forbidden = any(error.type == "FORBIDDEN" for error in errors)
            raise GitHubError("POST", WHERE, 403 if forbidden else 422, text) from None
        log.info("the check left on the earlier commit stays as it was: %s", "; ".join(e.message for e in errors))
    except RequestFailed as exc:
        raise GitHubError("POST", WHERE, exc.response.status_code, exc.response.text[:300]) from None
    except ValidationError:  # 200 but no GraphQL answer (githubkit's model refuses it): whether it was made is unknown
        raise GitHubError("POST", WHERE, 422, "the answer was neither data nor errors") from None
    found = _made(data)
    if found is None:
        raise GitHubError("POST", WHERE, 422, "no check run in the answer")
    return found


def _made(data: dict[str, Any]) -> MadeCheck | None:
    check = ((data.get("made") or {}).get("checkRun")) or {}
    if not isinstance(check.get("databaseId"), int) or not check.get("id"):
        return None
    return MadeCheck(int(check["databaseId"]), str(check["id"]))
