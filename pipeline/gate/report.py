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
import re

import numpy as np

from pipeline.gate.bands import DEFAULT_ALPHA, DEFAULT_K, DEFAULT_WINDOW, MIN_HISTORY, prediction_band
from pipeline.gate.format import band_text, system_label, text_not_shown, verdict_text
from pipeline.scoring.diagnostics import summarize

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
mark.lcs{background:#ffe08a}mark.uni{background:#d9ecff}.nc{background:#fff1c9}
.words{font-family:monospace;font-size:12px;background:#fafafa;padding:4px;white-space:pre-wrap;margin:2px 0}
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
    sub = bw / max(1, len(counts))   # one slot per series, side by side: no blended colours
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
            parts.append(f'<rect x="{pad_l + i * bw + k * sub + 0.5:.1f}" y="{pad_t + h - bh:.1f}" '
                         f'width="{max(sub - 1, 0.5):.1f}" height="{bh:.1f}" fill="{color}" fill-opacity="0.85">'
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


_LEFT = ' class="l"'


def _table(head: list[str], rows: list[list[str]], left: int = 2, classes: list[str] | None = None) -> str:
    out = ["<table><thead><tr>" + "".join(f'<th{_LEFT if i < left else ""}>{esc(h)}</th>'
                                          for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for k, r in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes and classes[k] else ""
        out.append(f"<tr{cls}>" + "".join(f'<td{_LEFT if i < left else ""}>{c}</td>' for i, c in enumerate(r))
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
            "<p>Per example, next to the scores (see <code>pipeline/scoring/diagnostics.py</code>): length ratio, share of "
            "repeated 3-grams (padding, duplicated lines), Grusky et al. 2018 extractive coverage/density/compression "
            "and novel n-grams against the source, longest copied span; with several references, each reference "
            "scored against the others (the agreement band).</p>"]
    body.append(_table(["system", "diagnostic", "n", "mean", "median", "min", "max"],
                       [[esc(system_label(r["system"])), esc(r["column"]), str(r["count"]), _num(r["mean"]),
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


def history_trend(run, history: list, k: float | None = None, window: int | None = None,
                  min_history: int | None = None) -> dict:
    """The trend of every system's mean F over ``history`` (earlier ``RunData``, oldest first) and
    ``run``, with the history band where there are enough runs (as ``compare --history``)."""
    k = DEFAULT_K if k is None else k
    window = DEFAULT_WINDOW if window is None else window
    min_history = MIN_HISTORY if min_history is None else min_history
    hist = [h.means() for h in history]
    now = run.means()
    means, chart = {}, []
    keys = sorted(set(now) | {key for h in hist for key in h})
    for (system, t) in keys:
        values = [h.get((system, t)) for h in hist] + [now.get((system, t))]
        means.setdefault(system, {})[t] = values
        hv = [v for v in values[:-1] if v is not None]
        if len(hv) >= min_history:   # the t prediction band at the night's level (as compare draws it)
            chart.append({"system": system, "type": t,
                          **prediction_band(hv, DEFAULT_ALPHA / max(1, len(keys)), window)})
    return {"trend": {"runs": [{"url": h.url} for h in history] + [{"url": run.url}], "means": means},
            "chart": chart, "rows": []}


def run_report(run, title: str | None = None, history: list | None = None) -> str:
    """HTML for one finished run (``pipeline.gate.runs.RunData``); with ``history`` (earlier runs,
    oldest first), the trend of each system's mean F with the band."""
    df = run.scores
    types = _types_of(df, run.rouge_types)
    stats = (run.stats or {}).get("rows", [])
    body = [f"<h1>{esc(title or 'ROUGE run report')}</h1>",
            f"<p>Run: <code>{esc(run.url)}</code></p>",
            f'<p>Signature: <span class="sig" id="signature">{esc(run.signature)}</span></p>']
    if getattr(run, "record", None):
        body.append(f'<p id="gate">Gate: {esc(run.record.get("verdict"))} against <code>'
                    f'{esc(run.record.get("base"))}</code> ({esc(run.record.get("at"))})</p>')
    if getattr(run, "accepted", None):
        a = run.accepted
        body.append(f'<p id="accepted">Accepted by {esc(a.get("by"))} at {esc(a.get("at"))}: '
                    f'{esc(a.get("reason"))} (a new history starts here)</p>')
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
        rows.append([esc(system_label(system)), esc(t), str(f.get("count", "")), _num(p.get("mean")), _num(rc.get("mean")),
                     _num(f.get("mean")), _num(f.get("std")), f"[{_num(f.get('ci_low'))}, {_num(f.get('ci_high'))}]",
                     f"[{_num(p.get('ci_low'))}, {_num(p.get('ci_high'))}]",
                     f"[{_num(rc.get('ci_low'))}, {_num(rc.get('ci_high'))}]"])
    body.append(_table(["system", "type", "n", "P", "R", "F", "F std", "F 95% CI", "P 95% CI", "R 95% CI"], rows)
                if rows else "<p>No statistics.</p>")
    if history:
        body += _trend_section(history_trend(run, history))
    body.append("<h2>F-measure distributions</h2><div class=\"figs\">")
    for system in sorted(df["system"].unique()) if len(df) else []:
        g = df[df["system"] == system]
        for t in types:
            cap = f"{system_label(system)} - {t} F (n={len(g)})"
            body.append(f"<figure>{histogram_svg([g[f'{t}_fmeasure'].to_numpy()], cap)}"
                        f"<figcaption>{esc(cap)}</figcaption></figure>")
    body.append("</div>")
    body += _diag_section(df)
    return _page(title or "ROUGE run report", body)


def _diff_table(rows_in: list[dict]) -> list[str]:
    rows, cls = [], []
    for r in rows_in:
        bnd = r.get("band") or "-"
        if r.get("band_low") is not None:
            bnd += f" [{_num(r['band_low'])}, {_num(r['band_high'])}]"
        rows.append([esc(system_label(r["system"])), esc(r["type"]), esc(r["stat"]), str(r["n"]), _num(r["base"]),
                     _num(r["new"]), _num(r["delta"], "+.4f"),
                     f"[{_num(r['ci_low'], '+.4f')}, {_num(r['ci_high'], '+.4f')}]", _num(r["p_value"]), esc(bnd),
                     esc(("ALARM " if r["alarm"] else "") + r["status"])])
        cls.append("alarm" if r["alarm"] else ("nc" if r["status"] == "no common examples" else ""))
    return [_table(["system", "type", "stat", "n", "base", "new", "delta", "CI", "p", "band", "status"], rows, 3, cls)]


# --------------------------------------------------------------------------- trend charts
def trend_svg(values: list, band: dict | None, title: str, width: int = 260, height: int = 140) -> str:
    """Mean F per run (oldest first, the last is the new run) with the band drawn as a shaded strip."""
    pad_l, pad_r, pad_t, pad_b = 40, 8, 8, 18
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    pts = [(i, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    ys = [v for _, v in pts] + ([band["low"], band["high"]] if band else [])
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    if hi - lo < 1e-3:
        lo, hi = lo - 5e-4, hi + 5e-4
    span = hi - lo
    lo, hi = lo - 0.08 * span, hi + 0.08 * span
    n = max(len(values) - 1, 1)

    def X(i):
        return pad_l + w * i / n

    def Y(v):
        return pad_t + h * (hi - v) / (hi - lo)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="trend" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}"><title>{esc(title)}</title>']
    if band:
        parts.append(f'<rect class="band" x="{pad_l}" y="{Y(band["high"]):.1f}" width="{w}" '
                     f'height="{max(Y(band["low"]) - Y(band["high"]), 0.5):.1f}" fill="#4c78a8" fill-opacity="0.18">'
                     f'<title>band [{band["low"]:.4f}, {band["high"]:.4f}]</title></rect>')
        parts.append(f'<line x1="{pad_l}" x2="{pad_l + w}" y1="{Y(band["centre"]):.1f}" y2="{Y(band["centre"]):.1f}" '
                     f'stroke="#4c78a8" stroke-dasharray="3,3"/>')
    parts.append(f'<line x1="{pad_l}" y1="{pad_t + h}" x2="{pad_l + w}" y2="{pad_t + h}" stroke="#888"/>'
                 f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + h}" stroke="#888"/>')
    if len(pts) > 1:
        parts.append('<polyline fill="none" stroke="#555" stroke-width="1.5" points="'
                     + " ".join(f"{X(i):.1f},{Y(v):.1f}" for i, v in pts) + '"/>')
    last = len(values) - 1
    for i, v in pts:
        out = band is not None and (v > band["high"] or v < band["low"])
        color = "#d62728" if i == last and out else ("#f58518" if i == last else "#555")
        parts.append(f'<circle cx="{X(i):.1f}" cy="{Y(v):.1f}" r="{4 if i == last else 2.5}" fill="{color}">'
                     f'<title>{"new" if i == last else f"run {i + 1}"}: {v:.4f}</title></circle>')
    parts.append(f'<text x="{pad_l - 3}" y="{pad_t + 9}" font-size="10" text-anchor="end">{hi:.3f}</text>'
                 f'<text x="{pad_l - 3}" y="{pad_t + h}" font-size="10" text-anchor="end">{lo:.3f}</text>'
                 f'<text x="{pad_l + w}" y="{height - 4}" font-size="10" text-anchor="end">new</text>'
                 f'<text x="{pad_l}" y="{height - 4}" font-size="10">{len(values) - 1} earlier</text></svg>')
    return "".join(parts)


def _trend_section(result: dict) -> list[str]:
    trend = result.get("trend") or {}
    if not trend.get("means"):
        return []
    bands = {(c["system"], c["type"]): c for c in result.get("chart", [])}
    alarms = {(r["system"], r["type"]) for r in result["rows"] if r["alarm"]}
    body = ["<h2>Trend of the mean F over the history</h2>",
            f"<p>{len(trend['runs']) - 1} earlier runs and the new one (last point); the shaded strip is the band "
            "(absent where there was too little history and the bootstrap band was used).</p>", '<div class="figs">']
    for system, by_type in sorted(trend["means"].items()):
        for t, values in by_type.items():
            cap = f"{system_label(system)} - {t} F" + (" (ALARM)" if (system, t) in alarms else "")
            fig = '<figure class="alarm">' if (system, t) in alarms else "<figure>"
            body.append(f'{fig}'
                        f'{trend_svg(values, bands.get((system, t)), cap)}<figcaption>{esc(cap)}</figcaption></figure>')
    body.append("</div>")
    return body


# --------------------------------------------------------------------------- matched words
_NORM = re.compile(r"[^0-9a-z]+")
MAX_WORDS = 800


def _norm(word: str) -> str:
    return _NORM.sub("", word.lower())


def lcs_mask(a: list[str], b: list[str]) -> tuple[list[bool], list[bool]]:
    """Which tokens of ``a`` and ``b`` lie on one longest common subsequence (empty tokens never match)."""
    n, m = len(a), len(b)
    dp = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(n):
        ai, row, nxt = a[i], dp[i], dp[i + 1]
        for j in range(m):
            nxt[j + 1] = row[j] + 1 if ai and ai == b[j] else max(row[j + 1], nxt[j])
    ma, mb = [False] * n, [False] * m
    i, j = n, m
    while i and j:
        if a[i - 1] and a[i - 1] == b[j - 1]:
            ma[i - 1] = mb[j - 1] = True
            i, j = i - 1, j - 1
        elif dp[i - 1][j] >= dp[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return ma, mb


def highlight(text: str, other: str) -> str:
    """``text`` as HTML with its words on the LCS with ``other`` marked ``<mark class="lcs">`` and the
    other words that occur in ``other`` (unigram matches off the LCS) ``<mark class="uni">``; words
    compare lower-cased with non-alphanumerics removed, as the default tokenizer does."""
    words = text.split()
    if len(words) > MAX_WORDS or len(other.split()) > MAX_WORDS:
        return esc(text)
    a = [_norm(w) for w in words]
    b = [_norm(w) for w in other.split()]
    on_lcs, _ = lcs_mask(a, b)
    vocab = set(x for x in b if x)
    out = []
    for w, k, on in zip(words, a, on_lcs):
        if on:
            out.append(f'<mark class="lcs">{esc(w)}</mark>')
        elif k and k in vocab:
            out.append(f'<mark class="uni">{esc(w)}</mark>')
        else:
            out.append(esc(w))
    return " ".join(out)


def _mover_html(k: int, m: dict) -> str:
    d = ", ".join(f"{esc(t)} {v:+.3f}" for t, v in m["delta_f"].items())
    diag = ", ".join(f"{esc(n[5:])} {_num(v[0], '.3f')} &rarr; {_num(v[1], '.3f')}"
                     for n, v in m.get("diagnostics", {}).items()
                     if n in ("diag_len_ratio", "diag_repeat_3gram", "diag_coverage") and v[0] != v[1])
    parts = [f'<div class="mover"><b>{k}. [{esc(system_label(m["system"]))}] {esc(m["id"])}</b>: &Delta;F {d}; '
             f'tokens {m["cand_tokens"][0]} &rarr; {m["cand_tokens"][1]}' + (f"; {diag}" if diag else "")]
    refs = m.get("references") or []
    ref = refs[0] if refs else None
    for name, label in (("base_candidate", "base"), ("new_candidate", "new")):
        if m.get(name) is not None:
            parts.append(f"<div>{label} candidate:</div>")
            parts.append(f'<div class="words">{highlight(m[name], ref) if ref else esc(m[name])}</div>')
        elif (m.get("texts_note") or {}).get(label):
            parts.append(f"<div>{label} candidate: {esc(text_not_shown(m['texts_note'][label]))}</div>")
    for i, r in enumerate(refs):
        if i == 0 and m.get("new_candidate") is not None:
            parts.append(f"<div>reference {i + 1} (marked: the words the new candidate matched):</div>")
            parts.append(f'<div class="words">{highlight(r, m["new_candidate"])}</div>')
        else:
            parts.append(f"<div>reference {i + 1}:</div><div class=\"words\">{esc(r)}</div>")
    parts.append("</div>")
    return "".join(parts)


def compare_report(result: dict, base, new, title: str | None = None) -> str:
    """HTML for a comparison (``pipeline.gate.compare.compare`` result and the two ``RunData``)."""
    verdict = result.get("verdict", "moved" if result["moved"] else "no change")
    badge = {"moved": ("alarm", "MOVED"), "not comparable": ("alarm", "NOT COMPARABLE"),
             "no change": ("ok", "No change: inside the band"),
             "inconclusive": ("nc", "INCONCLUSIVE")}[verdict]
    body = [f"<h1>{esc(title or 'ROUGE comparison')}</h1>",
            f"<p>Base: <code>{esc(result['base'])}</code><br>New: <code>{esc(result['new'])}</code></p>",
            f'<p class="verdict {badge[0]}" id="verdict">{badge[1]}</p>',
            ("" if verdict == "moved" else f'<p id="verdict-text">{esc(verdict_text(result))}</p>'),
            f"<p>Band: {esc(band_text(result))}; {esc(result['band']['ci'])}; {esc(result['band']['test'])}.</p>"]
    if result["reasons"]:
        body.append('<ul id="reasons">' + "".join(f"<li>{esc(r)}</li>" for r in result["reasons"]) + "</ul>")
    for note in result.get("notes", []):
        body.append(f"<p>Note: {esc(note)}</p>")
    cov = result.get("coverage", [])
    if cov:
        body.append(f"<h2>Coverage</h2><p>Share of each system's base examples present in the new run "
                    f"(minimum {esc(result.get('min_coverage'))}).</p>")
        body.append(_table(["system", "base examples", "new examples", "common", "coverage"],
                           [[esc(system_label(c["system"])), str(c["n_base"]), str(c["n_new"]), str(c["n_common"]),
                             f"{c['coverage']:.1%}"] for c in cov], left=1,
                           classes=["alarm" if c["coverage"] < result.get("min_coverage", 1.0) else "" for c in cov]))
    body.append(f'<p>Signature (base): <span class="sig">{esc(result["base_signature"])}</span><br>'
                f'Signature (new): <span class="sig">{esc(result["new_signature"])}</span>'
                + ("" if result["same_signature"] else " <b>(different)</b>") + "</p>")
    body += _trend_section(result)
    body.append("<h2>Differences of F (new - base)</h2>")
    body += _diff_table([r for r in result["rows"] if r["stat"] == "fmeasure"])
    body.append("<details><summary>Precision and recall</summary>")
    body += _diff_table([r for r in result["rows"] if r["stat"] != "fmeasure"])
    body.append("</details>")
    n_changed = result["n_changed_examples"]
    body.append("<h2>Examples that moved most</h2>")
    if not result["movers"]:
        body.append("<p>No example changed.</p>")
    else:
        body.append(f"<p>{esc(n_changed)} examples changed; the {len(result['movers'])} with the largest "
                    "|&Delta;F| over the rouge types. In the candidates, <mark class=\"lcs\">words on the "
                    "longest common subsequence</mark> with reference 1 and <mark class=\"uni\">other words "
                    "found in it</mark>.</p>")
    if result.get("texts_error"):
        body.append(f"<p>Texts unavailable: {esc(result['texts_error'])}</p>")
    for k, m in enumerate(result["movers"], 1):
        body.append(_mover_html(k, m))
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
            cap = f"{system_label(system)} - {t} F"
            series = [g[c].to_numpy() if c in g else np.zeros(0) for g in (gb, gn)]
            body.append(f"<figure>{histogram_svg(series, cap, labels=['base', 'new'])}"
                        f"<figcaption>{esc(cap)}</figcaption></figure>")
    body.append("</div>")
    body.append("<h2>Ids in one run only</h2>")
    if not result["only_in_one"]:
        body.append("<p>None: every (system, id) is in both runs.</p>")
    else:
        rows = []
        for o in result["only_in_one"]:
            if o["system_missing"]:
                rows.append([esc(system_label(o["system"])), f"whole system only in the {esc(o['only_in'])} run",
                             "", ""])
            else:
                rows.append([esc(system_label(o["system"])), "", f"{o['n_only_base']}: {esc(', '.join(o['only_base']))}",
                             f"{o['n_only_new']}: {esc(', '.join(o['only_new']))}"])
        body.append(_table(["system", "note", "only in base", "only in new"], rows, left=4))
    body += _diag_section(new.scores)
    return _page(title or "ROUGE comparison", body)


def significance_report(result: dict, title: str | None = None) -> str:
    """HTML for ``pipeline.gate.significance.significance``: one table per rouge type and statistic."""
    st = result["settings"]
    pct = int(round(st["confidence"] * 100))
    body = [f"<h1>{esc(title or 'ROUGE: system vs system')}</h1>",
            f"<p>Baseline <b>{esc(system_label(result['baseline']))}</b> from <code>{esc(result['base'])}</code>"
            + ("" if result["new"] == result["base"] else f"; systems from <code>{esc(result['new'])}</code>")
            + f"; documents by <code>{esc(result['doc_key'])}</code>.</p>",
            f"<p>{esc(st['bootstrap'])} ({esc(st['n_boot'])} replicates); {esc(st['randomization'])} "
            f"({esc(st['n_trials'])} trials); seed {esc(st['seed'])}; {esc(st['correction'])}. "
            f"Marked rows: significant at {1 - st['confidence']:.2f} by both tests after the correction (green: "
            "above the baseline, red: below).</p>"]
    for b in result["not_comparable"]:
        body.append(f'<p class="verdict alarm">Not comparable: {esc(b)}</p>')
    for t in result["rouge_types"]:
        for s in result["stats"]:
            fam = [r for r in result["rows"] if r["type"] == t and r["stat"] == s]
            if not fam:
                continue
            body.append(f"<h2>{esc(t)} {esc(s)}</h2>")
            b = fam[0]
            rows = [[f"Baseline: {esc(system_label(b['baseline']))}", str(b["n_docs"]),
                     f"{b['baseline_mean']:.4f} [{b['baseline_ci'][0]:.4f}, {b['baseline_ci'][1]:.4f}]",
                     "", "", "", "", ""]]
            cls = [""]
            for r in fam:
                rows.append([esc(system_label(r["system"])), str(r["n_docs"]),
                             f"{r['system_mean']:.4f} [{r['system_ci'][0]:.4f}, {r['system_ci'][1]:.4f}]",
                             f"{r['delta']:+.4f} [{r['delta_ci'][0]:+.4f}, {r['delta_ci'][1]:+.4f}]",
                             _num(r["p_bootstrap"]), _num(r["p_bootstrap_holm"]), _num(r["p_ar"]),
                             _num(r["p_ar_holm"])])
                cls.append(("ok" if r["delta"] > 0 else "alarm") if r["significant"] else "")
            body.append(_table(["system", "docs", f"mean ({pct}% CI)", f"delta ({pct}% CI)", "p bootstrap",
                                "p bootstrap (Holm)", "p AR", "p AR (Holm)"], rows, left=1, classes=cls))
    return _page(title or "ROUGE: system vs system", body)


__all__ = ["run_report", "compare_report", "significance_report", "histogram_svg", "trend_svg", "highlight"]
