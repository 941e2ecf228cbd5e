"""How a comparison reads on a terminal (and in the report's captions): the system label,
the band and verdict lines, and the table of rows and movers."""
from __future__ import annotations

NO_SYSTEM = "(no system)"


def system_label(system: str) -> str:
    """How every table, caption and message shows a system; the empty system (input without
    systems) is ``(no system)`` everywhere (the JSON keeps the value, ``""``)."""
    return system if system else NO_SYSTEM


def text_not_shown(why: str) -> str:
    """A mover's side whose text is not the one the run scored (``texts_note``)."""
    return f"(text not shown: {why})"


def _fmt(v, spec="+.4f"):
    return "-" if v is None else format(v, spec)


def band_text(result: dict) -> str:
    """One line naming the band(s) the rows used, with their settings."""
    b = result["band"]
    used = sorted({r.get("band") for r in result["rows"] if r.get("band") and r["stat"] in b["alarm_stats"]})
    h = b.get("history") or {}
    parts = []
    if b["mode"] == "fixed":
        parts.append(f"fixed band |delta F| <= {b['band']}")
    if "history" in used:
        parts.append(f"history band: each compared example against its own last {h['window']} in-control runs "
                     f"({h['n_history_runs']} history runs), false-alarm rate at most {h['alpha']:.1%} of unchanged "
                     f"nights over the {h['rows_judged']} rows judged (Bonferroni, {h['level_per_row']:.2g} a row); "
                     f"alarm also needs |deviation| >= {b['min_effect']}; the drawn band is the t prediction "
                     f"interval of the mean at that level")
    if "replicates" in used:
        parts.append(f"replicate band: mean +- k * sd of the base and {h['n_replicates']} replicate runs "
                     f"(k {h['k']:g}; alarm also needs |deviation| >= {b['min_effect']})")
    if "bootstrap" in used or not parts:
        fb = (f" (fallback: fewer than {h['min_history']} history runs)" if h.get("n_history_runs") else "")
        parts.append(f"bootstrap band{fb}: {int(b['confidence'] * 100)}% paired bootstrap CI for the night "
                     f"(Bonferroni over {h.get('rows_judged', 1)} rows) excludes 0 and |delta F| >= {b['min_effect']}; "
                     f"no false-alarm rate per night is stated without {h['min_history']} in-control runs")
    return "; ".join(parts) + f" (n_boot {b['n_boot']}, n_perm {b['n_perm']}, seed {b['seed']})"


def verdict_text(result: dict) -> str:
    if result["verdict"] == "not comparable":
        return "NOT COMPARABLE: " + "; ".join(result["not_comparable"])
    if result["verdict"] == "moved":
        return "MOVED: " + "; ".join(result["reasons"])
    if result["verdict"] == "inconclusive":
        rows = [r for r in result["rows"] if r["status"] == "inconclusive" and r["stat"] in
                result["band"]["alarm_stats"]]
        worst = max(rows, key=lambda r: r["detectable"] if r["detectable"] is not None else float("inf"))
        d = worst["detectable"]
        return (f"INCONCLUSIVE: nothing moved, but {len(rows)} row(s) could not have seen a move of "
                f"{result['band']['min_effect']} (e.g. {system_label(worst['system'])} {worst['type']}: smallest "
                f"detectable {'-' if d is None else format(d, '.4f')}: too little history or too few examples)")
    return "no change: inside the band"


def format_result(result: dict, stats=("fmeasure",), width: int = 100) -> str:
    """The terminal table (F rows by default), the verdict, the movers and the one-run ids."""
    head = ["system", "type", "stat", "n", "base", "new", "delta", "CI", "p", "band", "detect", "status"]
    lines = []
    for r in result["rows"]:
        if r["stat"] not in stats:
            continue
        bnd = r.get("band") or "-"
        if r.get("band_low") is not None:
            bnd += f" [{r['band_low']:.4f}, {r['band_high']:.4f}]"
        lines.append([system_label(r["system"]), r["type"], r["stat"][0].upper(), str(r["n"]),
                      _fmt(r["base"], ".4f"), _fmt(r["new"], ".4f"), _fmt(r["delta"]),
                      f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _fmt(r["p_value"], ".4f"), bnd,
                      _fmt(r.get("detectable"), ".4f"), ("ALARM " if r["alarm"] else "") + r["status"]])
    widths = [max(len(head[i]), *(len(l[i]) for l in lines)) if lines else len(head[i]) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    out.append("")
    out.append("band: " + band_text(result))
    cov = [c for c in result.get("coverage", []) if c["coverage"] < 1]
    out.append("coverage: " + (", ".join(f"{system_label(c['system'])} {c['coverage']:.1%} ({c['n_common']}/"
                                         f"{c['n_base']})" for c in cov) if cov else
                               "every base example is in the new run"))
    if not result["same_signature"]:
        out.append(f"different signatures\n  base: {result['base_signature']}\n  new:  {result['new_signature']}")
    for o in result["only_in_one"]:
        name = system_label(o["system"])
        if o["system_missing"]:
            out.append(f"system {name!r}: only in the {o['only_in']} run")
        else:
            out.append(f"system {name!r}: {o['n_only_base']} ids only in base "
                       f"{o['only_base'][:5]}{' ...' if o['n_only_base'] > 5 else ''}, {o['n_only_new']} only in new "
                       f"{o['only_new'][:5]}{' ...' if o['n_only_new'] > 5 else ''}")
    for note in result.get("notes", []):
        out.append(f"note: {note}")
    out.append(f"changed examples: {result['n_changed_examples']}")
    if result["movers"]:
        out.append("")
        out.append(f"examples that moved most (top {len(result['movers'])} of {result['n_changed_examples']}):")
        for k, m in enumerate(result["movers"], 1):
            d = ", ".join(f"{t} {v:+.3f}" for t, v in m["delta_f"].items())
            out.append(f"{k:>3}. [{system_label(m['system'])}] {m['id']}: {d}; tokens {m['cand_tokens'][0]} -> "
                       f"{m['cand_tokens'][1]}")
            for name in ("base_candidate", "new_candidate"):
                text, side = m.get(name), name.split("_")[0]
                if text is not None:
                    t = " ".join(text.split())
                    out.append(f"       {side:>4}: {t[:width]}{'...' if len(t) > width else ''}")
                elif (m.get("texts_note") or {}).get(side):
                    out.append(f"       {side:>4}: {text_not_shown(m['texts_note'][side])}")
        if result.get("texts_error"):
            out.append(f"  (texts unavailable: {result['texts_error']})")
    out.append("")
    out.append(verdict_text(result))
    return "\n".join(out)
