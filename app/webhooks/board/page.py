"""The web board's HTML: server-rendered, no build step, no script. Every value from a run, a repository or the
query string is escaped where it is written (a run's title is a person's text), so nothing in it can become markup.
The page refreshes itself every ``REFRESH_S`` seconds with a meta refresh, filters are a plain GET form, and
each action is a POST form carrying the session's CSRF token."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from html import escape
from urllib.parse import urlencode

from app.engine.graph.svg import draw_svg
from app.engine.record import Status
from app.redact import Redactor
from app.webhooks.board.data import Picture, Row, age, cost, origin_link

REFRESH_S = 15
FILTERS = ("state", "team", "repo")
STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#1f2328}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #d0d7de;padding:.35em .5em;text-align:left}
th{background:#f6f8fa}tr.selected{background:#fff8c5}form.act{display:inline}form.filters{margin:1em 0}
.note{color:#9a6700}.error{color:#cf222e}pre.mermaid{background:#f6f8fa;padding:1em;overflow:auto}
div.graph{overflow:auto;max-width:100%}
button{cursor:pointer}.state-failed,.state-escalated{color:#cf222e}.state-done{color:#1a7f37}
"""
BUTTON = {"pause": "Pause", "resume": "Resume", "retry": "Retry", "cancel": "Cancel"}


@dataclass(frozen=True)
class View:
    """What one page shows: who, the rows after the filters, the selected run's picture, notes and a message."""

    login: str
    csrf: str
    web_url: str
    rows: list[Row]
    teams: list[str]
    repos: list[str]
    chosen: dict[str, str]
    selected: str | None = None
    picture: Picture | None = None
    notes: tuple[str, ...] = ()
    message: str = ""
    redact: Callable[[str], str] = field(default_factory=lambda: Redactor().text)  # the service's one redactor

    def text(self, value: str) -> str:
        """A value as the page shows it: secrets masked (a title or a hand-edited record may hold one), escaped."""
        return escape(self.redact(value))


def page(title: str, body: str, refresh: bool = False) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH_S}">' if refresh else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{meta}'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )


def sign_in_page(message: str = "") -> str:
    said = f'<p class="error">{escape(message)}</p>' if message else ""
    body = (
        f"<h1>Interlock board</h1>{said}<p>The board shows the runs of the repositories you can access.</p>"
        '<p><a id="sign-in" href="/board/login">Sign in with GitHub</a></p>'
    )
    return page("Interlock board: sign in", body)


def message_page(title: str, message: str, form: str = "") -> str:
    said = f'<p class="error" id="message">{escape(message)}</p>'
    body = f'<h1>{escape(title)}</h1>{said}{form}<p><a href="/board">Back to the board</a></p>'
    return page(title, body)


def retry_form(fields: dict[str, str]) -> str:
    """The posted action again, with its key: applied already, it is carried out as a redelivery is (SPEC GH8)."""
    inputs = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items())
    return f'<form method="post" action="/board/action">{inputs}<button id="again">Try again</button></form>'


def board_page(view: View) -> str:
    header = (
        f'<h1>Interlock board</h1><p>Signed in as <b id="login">{escape(view.login)}</b> '
        '<form class="act" method="post" action="/board/signout">'
        f'<input type="hidden" name="csrf" value="{escape(view.csrf)}"><button>Sign out</button></form></p>'
    )
    said = f'<p class="note" id="message">{escape(view.message)}</p>' if view.message else ""
    notes = "".join(f'<p class="error">{view.text(note)}</p>' for note in view.notes)
    table = _table(view) if view.rows else '<p id="empty">No runs to show.</p>'
    return page("Interlock board", header + said + notes + _filters(view) + table + _picture(view), refresh=True)


def _filters(view: View) -> str:
    states = [status.value for status in Status]
    fields = [("state", states), ("team", [view.redact(team) for team in view.teams]), ("repo", view.repos)]
    selects = "".join(
        f"<label>{name} {_select(name, options, view.chosen.get(name, ''))}</label> " for name, options in fields
    )
    return f'<form class="filters" method="get" action="/board">{selects}<button>Filter</button></form>'


def _select(name: str, options: Iterable[str], chosen: str) -> str:
    items = ['<option value="">all</option>'] + [
        f'<option value="{escape(o)}"{" selected" if o == chosen else ""}>{escape(o)}</option>' for o in options
    ]
    return f'<select name="{name}">{"".join(items)}</select>'


def _table(view: View) -> str:
    head = "".join(
        f"<th>{c}</th>"
        for c in ("repository", "run", "origin", "team", "graph", "current step", "state", "age", "cost", "actions")
    )
    rows = "".join(_row(view, row) for row in view.rows)
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _row(view: View, row: Row) -> str:
    run = row.run
    link = origin_link(view.web_url, run.request.origin)
    origin = view.text(run.request.origin or "local")
    origin_cell = f'<a href="{escape(link)}">{origin}</a>' if link else origin
    state = run.status.value + (" (stop requested)" if run.stop_requested else "")
    select = "/board?" + urlencode({**view.chosen, "run": row.key})
    cells = [
        escape(row.repo),
        f'<a class="select" href="{escape(select)}">{view.text(run.id)}</a>',
        f'{origin_cell} <span class="title">{view.text(run.request.title)}</span>',
        view.text(run.team or "(default)"),
        view.text(run.graph),
        view.text(run.stage),
        f'<span class="state-{escape(run.status.value)}">{escape(state)}</span>',
        escape(age(run)),
        escape(cost(run)),
        "".join(_action(view, row, action) for action in row.actions()),
    ]
    selected = ' class="selected"' if row.key == view.selected else ""
    tds = "".join(f"<td>{cell}</td>" for cell in cells)
    return f'<tr data-run="{escape(row.key)}"{selected}>{tds}</tr>'


def _action(view: View, row: Row, action: str) -> str:
    back = {f"back_{name}": value for name, value in view.chosen.items()}  # the filters, kept after the action
    hidden = {"csrf": view.csrf, "repo": row.repo, "run": row.run.id, "action": action, **back}
    inputs = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in hidden.items())
    return (
        f'<form class="act" method="post" action="/board/action">{inputs}'
        f'<button name="do" value="{action}" data-action="{action}">{BUTTON[action]}</button></form> '
    )


def _picture(view: View) -> str:
    if view.selected is None:
        return ""
    if view.picture is None:
        return f'<p class="error" id="picture">No run {escape(view.selected)} on the board.</p>'
    source = f'<pre class="mermaid">{view.text(view.picture.source)}</pre>'
    if view.picture.graph is None:  # the source says why it cannot be drawn
        return f'<section id="picture"><h2>{escape(view.selected)}</h2>{source}</section>'
    drawn = draw_svg(view.picture.graph, view.picture.current, view.picture.visits, clean=view.redact)
    return (
        f'<section id="picture"><h2>{escape(view.selected)}</h2><div class="graph">{drawn}</div>'
        f'<p class="worst">Worst case of any run: {view.text(view.picture.worst)}</p>'
        f"<details><summary>Mermaid source</summary>{source}</details></section>"
    )
