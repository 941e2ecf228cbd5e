"""``notify:`` in a nightly job file: POST the night's verdict to a webhook, Slack-compatible.

The URL is never in the job file: ``notify: {webhook_env: ROUGE_NIGHTLY_WEBHOOK}`` names the
environment variable that holds it (a Kubernetes Secret, the cron/Slurm env file), and a URL
written in the ``notify`` section is refused without being echoed.  Nothing here writes to the run
folder, and no line printed names the URL (only ``$VARIABLE``).

The message is ``{"text": "<one readable paragraph>", ...}`` -- Slack, Mattermost and most chat
webhooks show ``text`` -- plus structured fields for other receivers: ``job``, ``date``, ``run``,
``verdict``, ``exit_status``, ``systems`` and ``rows`` that moved (or were inconclusive),
``report`` (the HTML report's URL), for a moved or not comparable night ``accept`` (the command
that accepts it on purpose: the night alarms every night until then) and, for a failed or
timed-out scoring, ``scoring_status`` and ``line``.  A webhook that is down, refuses the message or
does not answer within ``timeout_seconds`` yields one warning line; the night's exit status never changes.
"""
from __future__ import annotations

import dataclasses
import json
import os

from pipeline import redaction

DEFAULT_ON = ("moved", "not_comparable", "inconclusive", "scoring_failed", "compare_failed", "timed_out")
DEFAULT_TIMEOUT = 10.0
MAX_ROWS = 20
HEADLINES = {"no_change": "no change", "moved": "MOVED", "not_comparable": "NOT COMPARABLE",
             "inconclusive": "inconclusive", "scoring_failed": "SCORING FAILED",
             "compare_failed": "COMPARISON FAILED", "timed_out": "TIMED OUT", "interrupted": "interrupted"}


@dataclasses.dataclass
class Night:
    """What one nightly run came to (what a notification tells)."""

    job: str
    date: str
    run: str
    verdict: str
    status: int
    report: str | None = None
    result: dict | None = None          # compare's JSON result, when it ran
    scoring_status: int | None = None   # the scoring's own status when it failed
    line: str | None = None             # the failure's one line
    accept: str | None = None           # the command that accepts a moved / not comparable night


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def check_no_literal_url(spec) -> None:
    """Refuse a URL written in the ``notify`` section, without repeating it (it is a secret)."""
    if spec is not None and any("://" in s or s.lower().startswith("hooks.") for s in _strings(spec)):
        raise ValueError("notify: a URL in the job file is refused (a webhook URL is a secret: the job file "
                         "is copied, logged and committed); put it in an environment variable and name the "
                         "variable: notify: {webhook_env: ROUGE_NIGHTLY_WEBHOOK}")


def check_environment(spec, environ=None) -> None:
    """A job that notifies needs its variable set: refused before anything runs, not found out at 3 a.m."""
    if not spec:
        return
    environ = os.environ if environ is None else environ
    if not environ.get(spec["webhook_env"], "").strip():
        raise ValueError(f"notify.webhook_env: the environment variable {spec['webhook_env']} is not set "
                         "(set it to the webhook URL, or remove notify: from the job file)")


def describe(spec) -> str:
    on = ", ".join(spec.get("when", DEFAULT_ON))
    return f"notify: POST a JSON message to ${spec['webhook_env']} when the night is {on}"


def _moved_rows(result: dict | None) -> list[dict]:
    rows = []
    for r in (result or {}).get("rows", []):
        if r.get("alarm") or str(r.get("status", "")).startswith("inconclusive"):
            rows.append({k: r.get(k) for k in ("system", "type", "stat", "base", "new", "delta", "band",
                                               "status")})
    return rows


def _row_text(r: dict) -> str:
    def f(v, spec=".4f"):
        return "-" if v is None else format(v, spec)

    return (f"{r['system'] or '(no system)'} {r['type']} {str(r['stat'])[:1].upper()}: {f(r['base'])} -> "
            f"{f(r['new'])} ({f(r['delta'], '+.4f')}, {r['status']})")


def message(night: Night) -> dict:
    """The JSON body: ``text`` for chat webhooks, the rest for anything that reads fields."""
    rows = _moved_rows(night.result)
    systems = sorted({r["system"] for r in rows})
    lines = [f"rouge-pipeline nightly {night.job} {night.date}: {HEADLINES.get(night.verdict, night.verdict)} "
             f"(exit {night.status})"]
    if rows:
        lines += [f"- {_row_text(r)}" for r in rows[:MAX_ROWS]]
        if len(rows) > MAX_ROWS:
            lines.append(f"- ... and {len(rows) - MAX_ROWS} more rows")
    for reason in (night.result or {}).get("not_comparable", []) if night.verdict == "not_comparable" else []:
        lines.append(f"- {reason}")
    if night.line:
        lines.append(night.line)
    lines.append(f"run: {night.run}")
    if night.report:
        lines.append(f"report: {night.report}")
    if night.accept:
        lines.append(f"it alarms every night until accepted on purpose: {night.accept}")
    body = {"text": "\n".join(lines), "job": night.job, "date": night.date, "run": night.run,
            "verdict": night.verdict, "exit_status": night.status, "systems": systems, "rows": rows,
            "report": night.report}
    if night.scoring_status is not None:
        body["scoring_status"] = night.scoring_status
    if night.line:
        body["line"] = night.line
    if night.accept:
        body["accept"] = night.accept
    return body


def send(url: str, body: dict, timeout: float) -> None:
    """POST ``body`` as JSON; raises ``OSError`` (``urllib.error.URLError``, a timeout) on failure."""
    import urllib.request  # start-up: for a job that notifies only

    req = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "User-Agent": "rouge-pipeline-nightly"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (the URL is the operator's)
        if not 200 <= resp.status < 300:
            raise OSError(f"the webhook answered HTTP {resp.status}")


def maybe_send(spec, night: Night, environ=None) -> str | None:
    """Notify when the night's verdict is one ``spec["when"]`` lists; a warning (never naming the URL)
    when the POST failed, else None."""
    if not spec or night.verdict not in spec.get("when", DEFAULT_ON):
        return None
    environ = os.environ if environ is None else environ
    var = spec["webhook_env"]
    url = environ.get(var, "").strip()
    if not url:
        return f"notify: ${var} is not set; no notification sent"
    timeout = float(spec.get("timeout_seconds", DEFAULT_TIMEOUT))
    if redaction.active() is not None:     # masked in any line printed from here on, too
        redaction.active().add([url])
    try:
        send(url, message(night), timeout)
    except (OSError, ValueError) as e:   # URLError, HTTPError and timeouts are OSErrors
        reason = getattr(e, "reason", None) or e
        text = " ".join(str(reason).replace(url, f"${var}").split()) or type(e).__name__
        return f"notify: the POST to ${var} failed ({type(e).__name__}: {text}; timeout {timeout:g}s)"
    return None
