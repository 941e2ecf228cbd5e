"""Did today's outputs move?  Can these runs be compared at all?  (issues #7, #18)

ROUGE is deterministic: scoring the same outputs twice gives the same numbers to the last
digit, so any movement of a mean is movement of the outputs.  It is a good detector of
change and a bad judge of quality, so this module alarms on a *delta band*, in either
direction, never on a level.  The details and the reasoning: ``docs/regressions.md``.

Method (``compare(base, new)``):

1. **Comparable or loud**, before any statistic.  Examples are aligned by ``(system, id)``.
   Coverage of a system = the share of its base examples present in the new run.  Below
   ``min_coverage`` (default 1.0: every base example), a system of the base run missing from
   the new one, or different signatures (unless ``allow_different_settings``) make the verdict
   ``"not comparable"`` (exit status 3) with the reasons; zero common examples is never
   "inside the band".  Ids present in the new run only are listed.  Examples whose status is
   ``too_long`` (NaN scores) in either run are left out of the statistics.
2. For every system, rouge type and statistic (P/R/F), the paired differences
   ``d_i = new_i - base_i`` give the mean difference ``delta``, a percentile confidence
   interval from a paired **Poisson bootstrap** whose weights are a pure function of
   ``(seed, system, id, replicate)`` (:mod:`pipeline.stats.poisson`, the same weights as the
   run statistics), and the two-sided p-value of a paired **sign-flip permutation test**.
3. The band, on the F-measure rows (``alarm_stats``), in this order of preference:

   * ``band=X``: a fixed absolute band; moved iff ``|delta| > X``.
   * **history** (``history=[runs]``, at least ``min_history`` of them holding the system): a
     control chart of the last ``window`` runs' means, ``mean +- k * sd`` (``method="mad"``: the
     robust ``median +- k * 1.4826 * MAD``); moved iff the new run's mean is strictly outside the
     band **and** at least ``min_effect`` from its centre.
   * **replicates** (``replicates=[runs]``: repeated runs of the base's build): the run-to-run
     variation ``sd`` of the means of the base and its replicates; moved iff
     ``|new - centre| > k * sd`` and ``>= min_effect`` (centre: the history median when there is
     enough history, else the mean of base and replicates).
   * otherwise the **bootstrap band**: moved iff the ``confidence`` bootstrap CI of ``delta``
     excludes 0 **and** ``|delta| >= min_effect``.

   Each row says which band it used (``band``).  Both directions alarm ("moved up",
   "moved down"): a jump up is as suspicious as a drop (copying, padding).
4. The movers: examples ranked by the largest ``|delta F|`` over the rouge types, with
   their candidate texts from both runs and the references, read back from each run's input
   (relative input paths resolve against the working directory recorded in the run's
   ``_run.json``); if an input has moved the movers are listed without texts and
   ``texts_error`` says why.

Exit statuses of ``rouge-pipeline compare``: 0 inside the band, 1 moved, 2 error, 3 not comparable.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipeline.gate.bands import (BAND_METHODS, DEFAULT_K, DEFAULT_METHOD, DEFAULT_WINDOW, MIN_HISTORY, history_band,
                            outside_chart, paired_bootstrap, replicate_band, sign_flip_pvalues)
from pipeline.gate.format import NO_SYSTEM, band_text, format_result, system_label, verdict_text
from pipeline.config import DEFAULT_MIN_EFFECT  # also the CLI's default
from pipeline.scoring.diagnostics import DIAG_NAMES
from pipeline.stats.keys import DEFAULT_SEED, example_key
from pipeline.gate.runs import (STATS, CompareError, RunData, find_runs, history_runs, load_run, previous_runs,
                           read_scores, read_texts, same_run)

# the names other modules and tests import from here; they live in runs, bands and compare_format
__all__ = ["BAND_METHODS", "DEFAULT_K", "DEFAULT_METHOD", "DEFAULT_WINDOW", "MIN_HISTORY", "NO_SYSTEM", "STATS",
           "CompareError", "RunData", "attach_texts", "band_text", "compare", "find_runs", "format_result",
           "history_band", "history_runs", "load_run", "outside_chart", "paired_bootstrap", "previous_runs",
           "read_scores", "read_texts", "replicate_band", "same_run", "settings_check", "sign_flip_pvalues",
           "signature_diff", "system_label", "verdict_text"]


def _f(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def settings_check(base_sig: str, new_sig: str, allowed: bool, blockers: list[str]) -> list[str]:
    """Two runs made with other settings: a blocker (appended), or, when ``allowed``, a note (returned)."""
    if base_sig == new_sig:
        return []
    diff = "different settings (signatures differ: " + "; ".join(signature_diff(base_sig, new_sig)) + ")"
    if allowed:
        return [diff + ", allowed by --allow-different-settings"]
    blockers.append(diff + "; pass --allow-different-settings if that is deliberate")
    return []


def signature_diff(a: str, b: str) -> list[str]:
    """The ``key:value`` fields of two signatures that differ."""
    fa = dict(f.split(":", 1) if ":" in f else (f, "") for f in a.split("|") if f)
    fb = dict(f.split(":", 1) if ":" in f else (f, "") for f in b.split("|") if f)
    return [f"{k}: {fa.get(k, '-')} vs {fb.get(k, '-')}" for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def compare(base: RunData, new: RunData, band: float | None = None, min_effect: float = DEFAULT_MIN_EFFECT,
            confidence: float = 0.95, n_boot: int = 1000, n_perm: int = 2000, seed: int = DEFAULT_SEED,
            top: int = 10, alarm_stats=("fmeasure",), texts: bool = True, only_list: int = 20,
            min_coverage: float = 1.0, allow_different_settings: bool = False,
            history: list[RunData] | None = None, replicates: list[RunData] | None = None,
            k: float = DEFAULT_K, window: int = DEFAULT_WINDOW, min_history: int = MIN_HISTORY,
            method: str = DEFAULT_METHOD) -> dict:
    """The comparison as a JSON-able dict (see the module docstring); ``result["verdict"]`` is
    ``"no change"``, ``"moved"`` or ``"not comparable"``."""
    types = [t for t in base.rouge_types if t in new.rouge_types]
    if not types:
        raise CompareError(f"no rouge type in common ({base.rouge_types} vs {new.rouge_types})")
    if band is not None and band < 0:
        raise CompareError("band must be >= 0")
    if not 0 <= min_coverage <= 1:
        raise CompareError("min_coverage must be in [0, 1]")
    if k <= 0 or window < 1 or min_history < 2:
        raise CompareError("k must be > 0, window >= 1 and min_history >= 2")
    if method not in BAND_METHODS:
        raise CompareError(f"unknown band method {method!r} ({', '.join(BAND_METHODS)})")
    history = [h for h in (history or []) if not same_run(h.url, new.url)]
    replicates = list(replicates or [])
    cols = [f"{t}_{s}" for t in types for s in STATS]
    bs = set(base.scores["system"].unique()) if len(base.scores) else set()
    ns = set(new.scores["system"].unique()) if len(new.scores) else set()
    rows, only, movers_all, reasons, blockers, coverage = [], [], [], [], [], []
    q = (1 - confidence) / 2

    # not comparable: settings first
    notes = settings_check(base.signature, new.signature, allow_different_settings, blockers)
    # history of other settings is left out of the band (a deliberate change starts a new history)
    other = [h for h in history if h.signature != new.signature]
    if other:
        history = [h for h in history if h.signature == new.signature]
        notes.append(f"{len(other)} history run(s) made with other settings left out of the band "
                     f"({', '.join(h.url for h in other[:3])}{' ...' if len(other) > 3 else ''})")
    for h in replicates:
        if h.signature != new.signature and not allow_different_settings:
            blockers.append(f"replicate run {h.url} was made with other settings ("
                            + "; ".join(signature_diff(h.signature, new.signature)) + ")")
    hist_means = [h.means() for h in history]
    rep_means = [r.means() for r in replicates]
    base_means, new_means = base.means(), new.means()
    chart: dict = {}

    for system in sorted(bs | ns):
        label = system_label(system)
        if system not in bs:
            only.append({"system": system, "only_in": "new", "system_missing": True, "n_only_base": 0,
                         "n_only_new": int((new.scores["system"] == system).sum()), "only_base": [], "only_new": []})
            notes.append(f"system {label!r} is only in the new run (not compared)")
            continue
        if system not in ns:
            n_b = int((base.scores["system"] == system).sum())
            only.append({"system": system, "only_in": "base", "system_missing": True, "n_only_base": n_b,
                         "n_only_new": 0, "only_base": [], "only_new": []})
            coverage.append({"system": system, "n_base": n_b, "n_new": 0, "n_common": 0, "coverage": 0.0})
            blockers.append(f"system {label!r} is only in the base run (coverage 0 of {n_b} examples)")
            continue
        b = base.scores[base.scores["system"] == system]
        n = new.scores[new.scores["system"] == system]
        m = b.merge(n, on="id", suffixes=("_base", "_new"), how="outer", indicator=True)
        ob = sorted(m.loc[m["_merge"] == "left_only", "id"].tolist())
        on = sorted(m.loc[m["_merge"] == "right_only", "id"].tolist())
        if ob or on:
            only.append({"system": system, "only_in": None, "system_missing": False,
                         "n_only_base": len(ob), "n_only_new": len(on),
                         "only_base": ob[:only_list], "only_new": on[:only_list]})
        m = m[m["_merge"] == "both"].sort_values("id", kind="stable")
        B = m[[c + "_base" for c in cols]].to_numpy(np.float64)
        N = m[[c + "_new" for c in cols]].to_numpy(np.float64)
        # coverage counts the examples actually compared: both runs have finite scores (a too_long
        # example's NaN scores in either run leave it out)
        ok = np.isfinite(B).all(axis=1) & np.isfinite(N).all(axis=1)
        n_unscored = int((~ok).sum())
        m, B, N = m[ok], B[ok], N[ok]
        n_common = int(len(m))
        cov = n_common / len(b) if len(b) else 1.0
        coverage.append({"system": system, "n_base": int(len(b)), "n_new": int(len(n)), "n_common": n_common,
                         "coverage": cov})
        if n_common == 0 or cov < min_coverage:
            unscored = f", {n_unscored} more without finite scores in one of the runs" if n_unscored else ""
            blockers.append(f"system {label!r}: coverage {cov:.1%} ({n_common} of {len(b)} base examples "
                            f"compared{unscored}) is below --min-coverage {min_coverage:.0%}")
        D = N - B
        ids = m["id"].tolist()
        keys = [example_key(system, i) for i in ids]
        if len(ids):
            reps = paired_bootstrap(keys, D, seed, n_boot) if n_boot > 0 else None
            pvals = sign_flip_pvalues(D, seed, n_perm) if n_perm > 0 else np.full(D.shape[1], np.nan)
        for c_i, c in enumerate(cols):
            t, s = c.rsplit("_", 1)
            if not len(ids):
                rows.append({"system": system, "type": t, "stat": s, "n": 0, "base": None, "new": None,
                             "delta": None, "ci_low": None, "ci_high": None, "p_value": None,
                             "alarm": False, "status": "no common examples", "band": None})
                continue
            delta = float(D[:, c_i].mean())
            if reps is not None:
                lo, hi = np.nanquantile(reps[:, c_i], [q, 1 - q])
            else:
                lo = hi = float("nan")
            row = {"system": system, "type": t, "stat": s, "n": len(ids),
                   "base": float(B[:, c_i].mean()), "new": float(N[:, c_i].mean()), "delta": delta,
                   "ci_low": _f(lo), "ci_high": _f(hi), "p_value": _f(pvals[c_i])}
            hv = [hm[(system, t)] for hm in hist_means if (system, t) in hm] if s == "fmeasure" else []
            rv = [rm[(system, t)] for rm in rep_means if (system, t) in rm] if s == "fmeasure" else []
            chart_b = None
            if band is not None:
                row["band"] = "fixed"
                outside = abs(delta) > band
                direction = delta
            elif rv and (system, t) in base_means:
                vals = [base_means[(system, t)], *rv]
                centre = history_band(hv, k, window, method)["centre"] if len(hv) >= min_history else None
                chart_b = replicate_band(vals, k, centre)
                row["band"] = "replicates"
            elif len(hv) >= min_history:
                chart_b = history_band(hv, k, window, method)
                row["band"] = "history"
            else:
                row["band"] = "bootstrap"
                outside = bool((lo > 0 or hi < 0) and abs(delta) >= min_effect)
                direction = delta
            if chart_b is not None:
                value = new_means.get((system, t), float("nan"))
                chart_b["value"] = value
                row.update({"band_centre": chart_b["centre"], "band_low": chart_b["low"],
                            "band_high": chart_b["high"], "band_sd": chart_b["sd"], "band_runs": chart_b["n_runs"]})
                outside = outside_chart(value, chart_b, min_effect)
                direction = value - chart_b["centre"]
                chart[(system, t)] = chart_b
            alarm = bool(outside and s in alarm_stats)
            row["alarm"] = alarm
            row["status"] = ("moved up" if direction > 0 else "moved down") if outside else "inside"
            rows.append(row)
            if alarm:
                if chart_b is not None:
                    reasons.append(f"{label} {t} F: mean {chart_b['value']:.4f} {row['status']}, outside the "
                                   f"{row['band']} band [{chart_b['low']:.4f}, {chart_b['high']:.4f}] "
                                   f"(centre {chart_b['centre']:.4f}, {chart_b['n_runs']} runs)")
                else:
                    reasons.append(f"{label} {t} {s[0].upper()}: delta {delta:+.4f} [{lo:+.4f}, {hi:+.4f}] "
                                   f"{row['status']}, "
                                   f"outside the {row['band']} band")
        # movers of this system
        fcols = [types.index(t) * 3 + 2 for t in types]
        if len(ids):
            dF = D[:, fcols]
            mag = np.abs(dF).max(axis=1)
            for j in np.flatnonzero(mag > 0):
                r = m.iloc[j]
                mv = {"system": system, "id": ids[j], "max_abs_delta_f": float(mag[j]),
                      "delta_f": {t: float(dF[j, k_]) for k_, t in enumerate(types)},
                      "base_f": {t: float(B[j, f]) for t, f in zip(types, fcols)},
                      "new_f": {t: float(N[j, f]) for t, f in zip(types, fcols)},
                      "cand_tokens": [int(r["cand_tokens_base"]), int(r["cand_tokens_new"])],
                      "diagnostics": {}}
                for dc in DIAG_NAMES:
                    if dc + "_base" in r.index and dc + "_new" in r.index:
                        mv["diagnostics"][dc] = [_nan_none(r[dc + "_base"]), _nan_none(r[dc + "_new"])]
                movers_all.append(mv)
    if not coverage and not blockers:
        blockers.append("the base run has no scored example")
    movers_all.sort(key=lambda x: (-x["max_abs_delta_f"], x["system"], x["id"]))
    movers = movers_all[:top]
    verdict = "not comparable" if blockers else ("moved" if reasons else "no change")
    trend = {"runs": [{"url": h.url, "time": h.recorded_time} for h in history]
             + [{"url": new.url, "time": new.recorded_time}],
             "means": {}}
    if history:
        for system in sorted(bs | ns):
            for t in types:
                trend["means"].setdefault(system, {})[t] = [hm.get((system, t)) for hm in hist_means] + \
                    [new_means.get((system, t))]
    result = {
        "base": base.url, "new": new.url,
        "base_signature": base.signature, "new_signature": new.signature,
        "same_signature": base.signature == new.signature,
        "rouge_types": types,
        "band": {"mode": "fixed" if band is not None else "noise", "band": band,
                 "min_effect": None if band is not None else min_effect, "confidence": confidence,
                 "n_boot": n_boot, "n_perm": n_perm, "seed": seed, "alarm_stats": list(alarm_stats),
                 "ci": "paired Poisson bootstrap (weights from seed, system, id)",
                 "test": "paired sign-flip permutation test",
                 "history": {"method": method, "choice": BAND_METHODS[method], "k": k, "window": window,
                             "min_history": min_history,
                             "n_history_runs": len(history), "n_replicates": len(replicates),
                             "fallback": "paired-bootstrap band when fewer than min_history runs hold the system"}},
        "coverage": coverage, "min_coverage": min_coverage,
        "allow_different_settings": allow_different_settings,
        "rows": rows, "only_in_one": only, "n_changed_examples": len(movers_all), "movers": movers,
        "reasons": blockers + reasons, "not_comparable": blockers, "notes": notes,
        "verdict": verdict, "trend": trend,
        "chart": [{"system": s_, "type": t_, **v} for (s_, t_), v in sorted(chart.items())],
    }
    result["moved"] = verdict == "moved"
    result["comparable"] = not blockers
    if texts and movers:
        attach_texts(result, base, new)
    return result


def _nan_none(v):
    try:
        if v is None or pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return float(v)


def attach_texts(result: dict, base: RunData, new: RunData) -> None:
    wanted = {(m["system"], m["id"]) for m in result["movers"]}
    errors = []
    got = {}
    for name, run in (("base", base), ("new", new)):
        try:
            got[name] = read_texts(run.info, wanted)
        except Exception as e:  # the input moved or is unreadable: list the movers without texts
            got[name] = {}
            errors.append(f"{name} input: {e}")
    for m in result["movers"]:
        key = (m["system"], m["id"])
        b, n = got["base"].get(key), got["new"].get(key)
        m["base_candidate"] = b["candidate"] if b else None
        m["new_candidate"] = n["candidate"] if n else None
        m["references"] = (n or b or {}).get("references")
    result["texts_error"] = "; ".join(errors) or None
