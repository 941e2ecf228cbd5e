"""Single-file HTML reports (issue #7): no script, no CDN, no network; inline CSS and SVG.

``run_report(run)``: the statistics table with confidence intervals and the signature,
F-measure histograms per system and type, the diagnostics summaries (and the reference
agreement band with several references).
``compare_report(result, base, new)``: the comparison rows with intervals and p-values, the
verdict, base-vs-new histograms, the examples that moved most with their texts, and the ids
present in one run only.
"""
from __future__ import annotations

import html
import math

import numpy as np

from pipeline.diagnostics import summarize

BINS = 20
COLORS = ("#4c78a8", "#f58518")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}.sig{font-family:monospace;font-size:12px;word-break:break-all}
.alarm{background:#fde0dc;font-weight:bold}.ok{background:#e3f4e3}
.verdict{font-size:18px;padding:8px 12px;display:inline-block;border-radius:4px}
.figs{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0;border:1px solid #eee;padding:4px}
figcaption{font-size:12px;text-align:center}
.mover{border:1px solid #ddd;margin:8px 0;padding:6px 10px}.mover pre{white-space:pre-wrap;margin:2px 0;
font-size:12px;background:#fafafa;padding:4px}.legend span{display:inline-block;width:12px;height:12px;
margin:0 4px 0 12px;vertical-align:middle}
"""


def esc(v) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _num(v, spec=".4f") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return format(v, spec)


def histogram_svg(series: list[np.ndarray], title: str, labels=None, width: int = 260, height: int = 150,
                  lo: float = 0.0, hi: float = 1.0, bins: int = BINS) -> str:
    """An inline SVG histogram of one or more value arrays (overlaid, semi-transparent bars)."""
    pad_l, pad_b, pad_t = 30, 22, 6
    w, h = width - pad_l - 6, height - pad_b - pad_t
    edges = np.linspace(lo, hi, bins + 1)
    counts = []
    for v in series:
        v = np.asarray(v, dtype=np.float64)
        v = v[np.isfinite(v)]
        counts.append(np.histogram(np.clip(v, lo, hi), bins=edges)[0])
    top = max(1, max((int(c.max()) for c in counts if c.size), default=1))
    bw = w / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="hist" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
             f'<title>{esc(title)}</title>',
             f'<line x1="{pad_l}" y1="{pad_t + h}" x2="{pad_l + w}" y2="{pad_t + h}" stroke="#888"/>',
             f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + h}" stroke="#888"/>']
    for k, c in enumerate(counts):
        color = COLORS[k % len(COLORS)]
        for i, n in enumerate(c.tolist()):
            if n == 0:
                continue
            bh = h * n / top
            name = labels[k] if labels else ""
            parts.append(f'<rect x="{pad_l + i * bw + 0.5:.1f}" y="{pad_t + h - bh:.1f}" width="{bw - 1:.1f}" '
                         f'height="{bh:.1f}" fill="{color}" fill-opacity="{0.85 if len(counts) == 1 else 0.55}">'
                         f'<title>{esc(name)} [{edges[i]:.2f}, {edges[i + 1]:.2f}): {n}</title></rect>')
    for x in (lo, (lo + hi) / 2, hi):
        px = pad_l + (x - lo) / (hi - lo) * w
        parts.append(f'<text x="{px:.1f}" y="{height - 6}" font-size="10" text-anchor="middle">{x:g}</text>')
    parts.append(f'<text x="{pad_l - 3}" y="{pad_t + 9}" font-size="10" text-anchor="end">{top}</text>')
    parts.append(f'<text x="{pad_l - 3}" y="{pad_t + h}" font-size="10" text-anchor="end">0</text>')
    parts.append("</svg>")
    return "".join(parts)


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "img-src data:\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _table(head: list[str], rows: list[list[str]], left: int = 2, classes: list[str] | None = None) -> str:
    out = ["<table><thead><tr>" + "".join(f'<th class="{"l" if i < left else ""}">{esc(h)}</th>'
                                          for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for k, r in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes and classes[k] else ""
        out.append(f"<tr{cls}>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(r))
                   + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _types_of(df, types=None) -> list[str]:
    if types:
        return [t for t in types if f"{t}_fmeasure" in df.columns]
    return [c[: -len("_fmeasure")] for c in df.columns if c.endswith("_fmeasure")]


def _diag_section(df) -> list[str]:
    rows = summarize(df) if len(df) else []
    if not rows:
        return ["<h2>Diagnostics</h2><p>No diagnostics columns in this run (scoring.diagnostics: false).</p>"]
    body = ["<h2>Diagnostics</h2>",
            "<p>Per example, next to the scores (see <code>pipeline/diagnostics.py</code>): length ratio, share of "
            "repeated 3-grams (padding, duplicated lines), Grusky et al. 2018 extractive coverage/density/compression "
            "and novel n-grams against the source, longest copied span; with several references, each reference "
            "scored against the others (the agreement band).</p>"]
    body.append(_table(["system", "diagnostic", "n", "mean", "median", "min", "max"],
                       [[esc(r["system"] or '""'), esc(r["column"]), str(r["count"]), _num(r["mean"]),
                         _num(r["median"]), _num(r["min"]), _num(r["max"])] for r in rows]))
    agree = [c for c in df.columns if c.startswith("diag_ref_agree_") and c.endswith("_mean")]
    band = []
    for c in agree:
        t = c[len("diag_ref_agree_"):-len("_mean")]
        v = df[c].dropna()
        if len(v):
            band.append([esc(t), str(len(v)), _num(float(v.mean())), _num(float(df[f"diag_ref_agree_{t}_min"].min())),
                         _num(float(df[f"diag_ref_agree_{t}_max"].max()))])
    if band:
        body.append("<h3>Reference agreement band (F of each reference against the others, max-F rule)</h3>")
        body.append(_table(["type", "examples", "mean", "min", "max"], band, left=1))
    return body


def run_report(run, title: str | None = None) -> str:
    """HTML for one finished run (``pipeline.compare.RunData``)."""
    df = run.scores
    types = _types_of(df, run.rouge_types)
    stats = (run.stats or {}).get("rows", [])
    body = [f"<h1>{esc(title or 'ROUGE run report')}</h1>",
            f"<p>Run: <code>{esc(run.url)}</code></p>",
            f'<p>Signature: <span class="sig" id="signature">{esc(run.signature)}</span></p>']
    if run.summary:
        s = run.summary
        body.append(f"<p>Rows {esc(s.get('rows'))}, quarantined {esc(s.get('quarantined', 0))}, "
                    f"systems {esc(len(s.get('systems', [])))}.</p>")
    body.append("<h2>Statistics</h2>")
    by: dict = {}
    for r in stats:
        by.setdefault((r["system"], r["type"]), {})[r["stat"]] = r
    rows = []
    for (system, t), st in by.items():
        f, p, rc = st.get("fmeasure", {}), st.get("precision", {}), st.get("recall", {})
        rows.append([esc(system or '""'), esc(t), str(f.get("count", "")), _num(p.get("mean")), _num(rc.get("mean")),
                     _num(f.get("mean")), _num(f.get("std")), f"[{_num(f.get('ci_low'))}, {_num(f.get('ci_high'))}]",
                     f"[{_num(p.get('ci_low'))}, {_num(p.get('ci_high'))}]",
                     f"[{_num(rc.get('ci_low'))}, {_num(rc.get('ci_high'))}]"])
    body.append(_table(["system", "type", "n", "P", "R", "F", "F std", "F 95% CI", "P 95% CI", "R 95% CI"], rows)
                if rows else "<p>No statistics.</p>")
    body.append("<h2>F-measure distributions</h2><div class=\"figs\">")
    for system in sorted(df["system"].unique()) if len(df) else []:
        g = df[df["system"] == system]
        for t in types:
            cap = f"{system or '(no system)'} - {t} F (n={len(g)})"
            body.append(f"<figure>{histogram_svg([g[f'{t}_fmeasure'].to_numpy()], cap)}"
                        f"<figcaption>{esc(cap)}</figcaption></figure>")
    body.append("</div>")
    body += _diag_section(df)
    return _page(title or "ROUGE run report", body)


def _diff_table(rows_in: list[dict]) -> list[str]:
    rows, cls = [], []
    for r in rows_in:
        rows.append([esc(r["system"] or '""'), esc(r["type"]), esc(r["stat"]), str(r["n"]), _num(r["base"]),
                     _num(r["new"]), _num(r["delta"], "+.4f"),
                     f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}]", _num(r["p_value"]),
                     esc(("ALARM " if r["alarm"] else "") + r["status"])])
        cls.append("alarm" if r["alarm"] else "")
    return [_table(["system", "type", "stat", "n", "base", "new", "delta", "CI", "p", "status"], rows, 3, cls)]


def compare_report(result: dict, base, new, title: str | None = None) -> str:
    """HTML for a comparison (``pipeline.compare.compare`` result and the two ``RunData``)."""
    moved = result["moved"]
    b = result["band"]
    band = (f"fixed band: |&Delta;F| &le; {esc(b['band'])}" if b["mode"] == "fixed" else
            f"noise band: the {esc(int(b['confidence'] * 100))}% paired bootstrap CI of &Delta;F excludes 0 and "
            f"|&Delta;F| &ge; {esc(b['min_effect'])}")
    body = [f"<h1>{esc(title or 'ROUGE comparison')}</h1>",
            f"<p>Base: <code>{esc(result['base'])}</code><br>New: <code>{esc(result['new'])}</code></p>",
            f'<p class="verdict {"alarm" if moved else "ok"}" id="verdict">'
            f'{"MOVED" if moved else "No change: inside the band"}</p>',
            f"<p>{band}; n_boot {esc(b['n_boot'])}, n_perm {esc(b['n_perm'])}, seed {esc(b['seed'])}; "
            f"{esc(b['ci'])}; {esc(b['test'])}.</p>"]
    if result["reasons"]:
        body.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in result["reasons"]) + "</ul>")
    body.append(f'<p>Signature (base): <span class="sig">{esc(result["base_signature"])}</span><br>'
                f'Signature (new): <span class="sig">{esc(result["new_signature"])}</span>'
                + ("" if result["same_signature"] else " <b>(different)</b>") + "</p>")
    body.append("<h2>Differences of F (new - base)</h2>")
    body += _diff_table([r for r in result["rows"] if r["stat"] == "fmeasure"])
    body.append("<details><summary>Precision and recall</summary>")
    body += _diff_table([r for r in result["rows"] if r["stat"] != "fmeasure"])
    body.append("</details>")
    types = result["rouge_types"]
    body.append('<h2>F-measure distributions</h2><p class="legend"><span style="background:%s"></span>base'
                '<span style="background:%s"></span>new</p><div class="figs">' % COLORS)
    systems = sorted(set(base.scores["system"].unique()) | set(new.scores["system"].unique())) \
        if len(base.scores) or len(new.scores) else []
    for system in systems:
        gb = base.scores[base.scores["system"] == system]
        gn = new.scores[new.scores["system"] == system]
        for t in types:
            c = f"{t}_fmeasure"
            cap = f"{system or '(no system)'} - {t} F"
            series = [g[c].to_numpy() if c in g else np.zeros(0) for g in (gb, gn)]
            body.append(f"<figure>{histogram_svg(series, cap, labels=['base', 'new'])}"
                        f"<figcaption>{esc(cap)}</figcaption></figure>")
    body.append("</div>")
    body.append(f"<h2>Examples that moved most</h2><p>{esc(result['n_changed_examples'])} examples changed; "
                f"the top {len(result['movers'])} by the largest |&Delta;F| over the rouge types.</p>")
    if result.get("texts_error"):
        body.append(f"<p>Texts unavailable: {esc(result['texts_error'])}</p>")
    for k, m in enumerate(result["movers"], 1):
        d = ", ".join(f"{esc(t)} {v:+.3f}" for t, v in m["delta_f"].items())
        diag = ", ".join(f"{esc(n[5:])} {_num(v[0], '.3f')} &rarr; {_num(v[1], '.3f')}"
                         for n, v in m.get("diagnostics", {}).items()
                         if n in ("diag_len_ratio", "diag_repeat_3gram", "diag_coverage") and v[0] != v[1])
        parts = [f'<div class="mover"><b>{k}. [{esc(m["system"])}] {esc(m["id"])}</b>: &Delta;F {d}; tokens '
                 f'{m["cand_tokens"][0]} &rarr; {m["cand_tokens"][1]}' + (f"; {diag}" if diag else "")]
        for name, label in (("base_candidate", "base"), ("new_candidate", "new")):
            if m.get(name) is not None:
                parts.append(f"<div>{label}:</div><pre>{esc(m[name])}</pre>")
        for i, ref in enumerate(m.get("references") or []):
            parts.append(f"<div>reference {i + 1}:</div><pre>{esc(ref)}</pre>")
        parts.append("</div>")
        body.append("".join(parts))
    body.append("<h2>Ids in one run only</h2>")
    if not result["only_in_one"]:
        body.append("<p>None: every (system, id) is in both runs.</p>")
    else:
        rows = []
        for o in result["only_in_one"]:
            if o["system_missing"]:
                rows.append([esc(o["system"]), f"whole system only in the {esc(o['only_in'])} run", "", ""])
            else:
                rows.append([esc(o["system"]), "", f"{o['n_only_base']}: {esc(', '.join(o['only_base']))}",
                             f"{o['n_only_new']}: {esc(', '.join(o['only_new']))}"])
        body.append(_table(["system", "note", "only in base", "only in new"], rows, left=4))
    body += _diag_section(new.scores)
    return _page(title or "ROUGE comparison", body)


__all__ = ["run_report", "compare_report", "histogram_svg"]
