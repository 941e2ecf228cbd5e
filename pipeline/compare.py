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
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import DEFAULT_MIN_EFFECT  # also the CLI's default
from pipeline.io.writers import read_json
from pipeline.diagnostics import DIAG_NAMES

STATS = ("precision", "recall", "fmeasure")
_CHUNK = 4096


class CompareError(RuntimeError):
    """A run cannot be read or the runs cannot be compared (exit status 2)."""


NO_SYSTEM = "(no system)"


def system_label(system: str) -> str:
    """How every table, caption and message shows a system; the empty system (input without
    systems) is ``(no system)`` everywhere (the JSON keeps the value, ``""``)."""
    return system if system else NO_SYSTEM


@dataclass
class RunData:
    url: str
    info: dict            # _run.json
    stats: dict | None    # stats/stats.json
    summary: dict | None  # _summary.json
    scores: pd.DataFrame  # every system's per-example scores

    @property
    def rouge_types(self) -> list[str]:
        return list(self.info.get("config", {}).get("scoring", {}).get("rouge_types") or [])

    @property
    def signature(self) -> str:
        return self.info.get("signature", "")

    @property
    def recorded_time(self) -> str:
        """When the run finished (``_summary.json``), else when it began (``_run.json``); ISO UTC."""
        return str((self.summary or {}).get("finished_at") or self.info.get("started_at") or "")

    @property
    def order(self) -> tuple[str, str]:
        """Where the run stands in a history: when it began (``_run.json``), then its URL."""
        return (str(self.info.get("started_at") or self.recorded_time), self.url)

    def means(self) -> dict[tuple[str, str], float]:
        """``{(system, type): mean F}`` over the run's finite scores."""
        out = {}
        if not len(self.scores):
            return out
        for system, g in self.scores.groupby("system", sort=True):
            for t in self.rouge_types:
                c = f"{t}_fmeasure"
                if c in g:
                    v = g[c].to_numpy(np.float64)
                    v = v[np.isfinite(v)]
                    if len(v):
                        out[(system, t)] = float(v.mean())
        return out


def read_scores(url: str, storage_options: dict | None = None) -> pd.DataFrame:
    """Every system's per-example scores of a run folder as one DataFrame (``id``, ``system``,
    the score and diagnostics columns).  The one place that knows the ``scores/`` layout."""
    from pipeline.io.paths import get_fs

    fs, path = get_fs(f"{url}/scores", storage_options)
    files = sorted(p for p in fs.find(path) if p.rsplit("/", 1)[-1].startswith("part-")) if fs.exists(path) else []
    tables = []
    for p in files:
        with fs.open(p, "rb") as f:
            tables.append(pq.read_table(f).replace_schema_metadata(None))
    if tables:
        return pa.concat_tables(tables, promote_options="default").to_pandas()
    return pd.DataFrame({"id": pd.Series([], dtype=object), "system": pd.Series([], dtype=object)})


def load_run(url: str, storage_options: dict | None = None) -> RunData:
    """A finished run (``_SUCCESS``): its ``_run.json``, statistics and per-example scores."""
    from pipeline.job.outputs import OldLayoutError, check_layout, is_complete

    url = str(url).rstrip("/")
    try:
        if not is_complete(url, storage_options):
            raise CompareError(f"{url} is not a finished run (no _SUCCESS)")
        info = read_json(f"{url}/_run.json", storage_options)
        if info is None:
            raise CompareError(f"{url}: no _run.json")
        try:
            check_layout(url, info)
        except OldLayoutError as e:
            raise CompareError(str(e)) from None
        df = read_scores(url, storage_options)
        return RunData(url, info, read_json(f"{url}/stats/stats.json", storage_options),
                       read_json(f"{url}/_summary.json", storage_options), df)
    except CompareError:
        raise
    except (OSError, ValueError) as e:
        raise CompareError(f"{url}: cannot read the run ({e})") from e


def same_run(a: str, b: str) -> bool:
    """Whether two run URLs name the same folder (local paths compared absolute, ``file://`` dropped)."""
    import os

    def norm(u: str) -> str:
        u = str(u).rstrip("/").removeprefix("file://")
        return u if "://" in u else os.path.abspath(u)

    return norm(a) == norm(b)


def _is_run(fs, path: str) -> bool:
    return fs.exists(f"{path.rstrip('/')}/_SUCCESS")


def find_runs(specs: list[str], storage_options: dict | None = None, exclude: str | None = None) -> list[RunData]:
    """The finished runs named by ``specs`` (run folders, folders of run folders such as a nightly
    root, or globs of either), sorted by their recorded time (then URL); ``exclude`` (a run URL)
    and unfinished folders are left out.  A spec that names nothing is an error."""
    from pipeline.io.paths import get_fs

    urls: list[str] = []
    for spec in specs:
        spec = str(spec).rstrip("/")
        fs, path = get_fs(spec, storage_options)
        proto = spec.split("://", 1)[0] if "://" in spec else "file"

        def url_of(p: str) -> str:
            return p if proto == "file" else f"{proto}://{p}"

        if any(c in path for c in "*?["):
            found = sorted(fs.glob(path))
        else:
            found = [path]
        hit = []
        for p in found:
            if _is_run(fs, p):
                hit.append(p)
            elif fs.isdir(p):
                hit += sorted(c for c in fs.ls(p, detail=False) if _is_run(fs, c))
        if not hit and not found:
            raise CompareError(f"history: nothing matches {spec}")
        urls += [url_of(p).rstrip("/") for p in hit]
    seen, runs = set(), []
    for u in urls:
        if u in seen or (exclude is not None and same_run(u, exclude)):
            continue
        seen.add(u)
        runs.append(load_run(u, storage_options))
    runs.sort(key=lambda r: (r.recorded_time, r.url))
    return runs


def previous_runs(new_url: str, storage_options: dict | None = None) -> list[RunData]:
    """The finished sibling run folders of ``new_url`` whose names sort before it (dated nightly
    folders), oldest first: the history of a nightly run."""
    from pipeline.io.paths import get_fs

    new_url = str(new_url).rstrip("/")
    parent, name = new_url.rsplit("/", 1) if "/" in new_url else (".", new_url)
    fs, path = get_fs(parent, storage_options)
    try:
        children = sorted(fs.ls(path, detail=False))
    except FileNotFoundError:
        return []
    urls = [f"{parent}/{c.rstrip('/').rsplit('/', 1)[-1]}" for c in children
            if c.rstrip("/").rsplit("/", 1)[-1] < name and _is_run(fs, c)]
    return [load_run(u, storage_options) for u in urls]


def history_runs(new: RunData, specs: list[str] | None = None, previous: bool = False,
                 storage_options: dict | None = None) -> list[RunData]:
    """The history of ``new``: the runs of ``specs`` (:func:`find_runs`) and, with ``previous``,
    its earlier sibling folders (:func:`previous_runs`), each once, keeping only runs that began
    before ``new`` (:attr:`RunData.order`; the new run and later runs are never part of its
    band), sorted by their recorded time (then URL)."""
    runs = (previous_runs(new.url, storage_options) if previous else []) + \
        (find_runs(specs, storage_options) if specs else [])
    seen, out = [], []
    for r in runs:
        if same_run(r.url, new.url) or any(same_run(r.url, u) for u in seen) or r.order >= new.order:
            continue
        seen.append(r.url)
        out.append(r)
    out.sort(key=lambda r: (r.recorded_time, r.url))
    return out


# --------------------------------------------------------------------------- statistics
def paired_bootstrap(keys: list[str], d: np.ndarray, seed: int, n_boot: int) -> np.ndarray:
    """Replicate means ``(n_boot, k)`` of the columns of ``d`` (n, k) under Poisson(1)
    weights derived from ``(seed, key, replicate)``; chunked over examples."""
    from pipeline.stats.poisson import example_bases, replicate_means

    return replicate_means(example_bases(keys, seed), d, n_boot, _CHUNK)


def sign_flip_pvalues(d: np.ndarray, seed: int, n_perm: int) -> np.ndarray:
    """Two-sided paired permutation (sign-flip) p-value of every column of ``d`` (n, k)."""
    n, k = d.shape
    if n == 0:
        return np.full(k, np.nan)
    obs = np.abs(d.mean(axis=0))
    tol = 1e-12 * np.maximum(1.0, np.abs(d).max(axis=0))
    rng = np.random.Generator(np.random.PCG64(seed))
    hits = np.zeros(k, dtype=np.int64)
    per = max(1, min(n_perm, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_perm:
        m = min(per, n_perm - done)
        s = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2 - 1
        means = np.abs(s @ d) / n
        hits += (means >= obs[None, :] - tol).sum(axis=0)
        done += m
    return (1 + hits) / (1 + n_perm)


def _f(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


# --------------------------------------------------------------------------- bands
BAND_METHODS = {"sd": "control chart: mean +- k * sd (ddof 1) of the last N runs' means",
                "mad": "robust control chart: median +- k * 1.4826 * MAD of the last N runs' means"}
DEFAULT_METHOD = "sd"    # with N ~ 7-14 runs the MAD is too noisy a scale (docs/regressions.md)
DEFAULT_K = 4.0          # control-chart width in standard deviations
DEFAULT_WINDOW = 14      # the last N runs of the history
MIN_HISTORY = 5          # fewer runs holding the system: the paired-bootstrap band instead


def history_band(values: list[float], k: float, window: int, method: str = DEFAULT_METHOD) -> dict:
    """The control chart of the last ``window`` means: centre and scale by ``method`` (``sd``: mean
    and sample sd; ``mad``: median and 1.4826 * MAD), band ``centre +- k * scale``."""
    v = np.asarray(values[-window:], dtype=np.float64)
    if method == "mad":
        centre = float(np.median(v))
        sd = float(1.4826 * np.median(np.abs(v - centre)))
    elif method == "sd":
        centre = float(v.mean())
        sd = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    else:
        raise CompareError(f"unknown band method {method!r} (sd, mad)")
    return {"centre": centre, "sd": sd, "low": centre - k * sd, "high": centre + k * sd, "n_runs": int(len(v))}


def replicate_band(values: list[float], k: float, centre: float | None = None) -> dict:
    """Run-to-run variation of the same build: ``mean +- k * sd`` (``ddof=1``) of the means."""
    v = np.asarray(values, dtype=np.float64)
    c = float(v.mean()) if centre is None else centre
    sd = float(v.std(ddof=1))
    return {"centre": c, "sd": sd, "low": c - k * sd, "high": c + k * sd, "n_runs": int(len(v))}


def outside_chart(value: float, b: dict, min_effect: float) -> bool:
    """Moved iff the value is strictly outside ``centre +- k*sd`` and at least ``min_effect``
    from the centre (so identical history, ``sd == 0``, alarms from ``min_effect`` on)."""
    dev = abs(value - b["centre"])
    return bool(value > b["high"] or value < b["low"]) and dev >= min_effect


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
            confidence: float = 0.95, n_boot: int = 1000, n_perm: int = 2000, seed: int = 12345,
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
        keys = [f"{system}\x1f{i}" for i in ids]
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


# --------------------------------------------------------------------------- texts
def _input_spec(info: dict):
    from pipeline.io.spec import InputSpec
    from pipeline.redaction import without_redacted

    cfg = info.get("config", {})
    inp = dict(cfg.get("input") or {})
    inp["storage_options"] = without_redacted({**(cfg.get("storage_options") or {}),
                                               **(inp.get("storage_options") or {})})
    cwd = info.get("cwd")
    if cwd:   # relative local paths are relative to where the run was started, not to here
        import os

        for key in ("paths", "candidates", "references"):
            v = inp.get(key)
            if v:
                vs = [v] if isinstance(v, str) else list(v)
                vs = [os.path.join(cwd, u) if "://" not in u and not os.path.isabs(u) else u for u in vs]
                inp[key] = vs[0] if isinstance(v, str) else vs
    return InputSpec.from_config(inp)


def read_texts(info: dict, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict]:
    """``{(system, id): {"candidate", "references", "source"}}`` for the wanted examples,
    read from the run's input (every unit is read once; only the wanted rows are kept)."""
    from pipeline.io.readers import plan_units, read_unit

    spec = _input_spec(info)
    out = {}
    for unit in plan_units(spec):
        table, _ = read_unit(spec, unit)
        sys_, ids = table.column("system").to_pylist(), table.column("id").to_pylist()
        hit = [k for k, key in enumerate(zip(sys_, ids)) if key in wanted]
        if not hit:
            continue
        cand, refs = table.column("candidate").to_pylist(), table.column("references").to_pylist()
        src = table.column("source").to_pylist()
        for k in hit:
            out[(sys_[k], ids[k])] = {"candidate": cand[k], "references": refs[k], "source": src[k]}
        if len(out) == len(wanted):
            break
    return out


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


# --------------------------------------------------------------------------- terminal
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
        parts.append(f"history band: {h['choice']} (k {h['k']:g}, N {h['window']}, {h['n_history_runs']} "
                     f"history runs; alarm also needs |deviation| >= {b['min_effect']})")
    if "replicates" in used:
        parts.append(f"replicate band: mean +- k * sd of the base and {h['n_replicates']} replicate runs "
                     f"(k {h['k']:g}; alarm also needs |deviation| >= {b['min_effect']})")
    if "bootstrap" in used or not parts:
        fb = (f" (fallback: fewer than {h['min_history']} history runs)" if h.get("n_history_runs") else "")
        parts.append(f"bootstrap band{fb}: {int(b['confidence'] * 100)}% paired bootstrap CI excludes 0 and "
                     f"|delta F| >= {b['min_effect']}")
    return "; ".join(parts) + f" (n_boot {b['n_boot']}, n_perm {b['n_perm']}, seed {b['seed']})"


def verdict_text(result: dict) -> str:
    if result["verdict"] == "not comparable":
        return "NOT COMPARABLE: " + "; ".join(result["not_comparable"])
    if result["verdict"] == "moved":
        return "MOVED: " + "; ".join(result["reasons"])
    return "no change: inside the band"


def format_result(result: dict, stats=("fmeasure",), width: int = 100) -> str:
    """The terminal table (F rows by default), the verdict, the movers and the one-run ids."""
    head = ["system", "type", "stat", "n", "base", "new", "delta", "CI", "p", "band", "status"]
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
                      ("ALARM " if r["alarm"] else "") + r["status"]])
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
                text = m.get(name)
                if text is not None:
                    t = " ".join(text.split())
                    out.append(f"       {name.split('_')[0]:>4}: {t[:width]}{'...' if len(t) > width else ''}")
        if result.get("texts_error"):
            out.append(f"  (texts unavailable: {result['texts_error']})")
    out.append("")
    out.append(verdict_text(result))
    return "\n".join(out)
