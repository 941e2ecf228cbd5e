"""``correlate --html FILE``: the rows as one self-contained HTML page (inline CSS, no script)."""
from __future__ import annotations

from html import escape

from pipeline.io.writers import write_bytes_atomic

_CSS = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}th{background:#eee}"
        "code{font-size:.85em;word-break:break-all}")


def _f(v) -> str:
    return "&ndash;" if v is None else f"{v:.4f}"


def render(doc: dict) -> str:
    """The page of :meth:`pipeline.meta.CorrelationResult.to_dict` (NaN already ``None``)."""
    parts = [f"<!doctype html><meta charset='utf-8'><title>correlate</title><style>{_CSS}</style>",
             "<h1>ROUGE against human judgments</h1>",
             "<p>What these numbers mean and do not mean: docs/meta-evaluation.md.</p>"]
    groups: dict[tuple, list] = {}
    for r in doc["rows"]:
        groups.setdefault((r["level"], r["coefficient"], r["signature"]), []).append(r)
    for (level, coef, sig), rows in groups.items():
        parts.append(f"<h2>{escape(level)} level, {escape(coef)}</h2><p><code>{escape(sig)}</code></p>")
        parts.append("<table><tr><th>type</th><th>stat</th><th>r</th><th>CI</th><th>used</th><th>skipped</th></tr>")
        for r in rows:
            parts.append(f"<tr><td>{escape(r['type'])}</td><td>{escape(r['stat'])}</td><td>{_f(r['r'])}</td>"
                         f"<td>[{_f(r['ci_low'])}, {_f(r['ci_high'])}]</td><td>{r['n_used']}</td>"
                         f"<td>{r['n_skipped']}</td></tr>")
        parts.append("</table>")
    for t in doc.get("compare", []):
        parts.append(f"<p>{escape(t['a'])} vs {escape(t['b'])} ({escape(t['level'])}, {escape(t['coefficient'])}): "
                     f"delta {_f(t['delta'])}, p(A better) {_f(t['p_bootstrap'])}</p>")
    return "\n".join(parts) + "\n"


def write_html(url: str, doc: dict) -> None:
    write_bytes_atomic(render(doc).encode("utf-8"), url)
