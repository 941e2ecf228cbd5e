"""Did today's outputs move?  Paired comparison of two finished runs (issue #7).

ROUGE is deterministic: scoring the same outputs twice gives the same numbers to the last
digit, so any movement of a mean is movement of the outputs.  It is a good detector of
change and a bad judge of quality, so this module alarms on a *delta band*, in either
direction, never on a level.

Method (``compare(base, new)``):

1. Examples are aligned by ``(system, id)``.  Ids present in one run only are listed (per
   system, counts and the first ids) and left out of the statistics; a system present in one
   run only raises the alarm.  Examples whose status is ``too_long`` (NaN scores) in either
   run are left out too.
2. For every system, rouge type (common to both runs) and statistic (P/R/F), the paired
   differences ``d_i = new_i - base_i`` give the mean difference ``delta``, a percentile
   confidence interval from a paired **Poisson bootstrap** whose weights are a pure function
   of ``(seed, system, id, replicate)`` (:mod:`pipeline.stats.poisson`, the same weights as
   the run statistics: independent of order and partitioning), and the two-sided p-value of a
   paired **sign-flip permutation test** (``n_perm`` random sign vectors from
   ``numpy.random.Generator(PCG64(seed))`` over the examples sorted by id;
   ``p = (1 + #{|mean(s*d)| >= |delta|}) / (1 + n_perm)``).
3. The band, on the F-measure rows (``alarm_stats``):

   * ``band=X`` (``--band 0.005``): a fixed absolute band; moved iff ``|delta| > X``.
   * default, the **noise band**: moved iff the ``confidence`` bootstrap CI of ``delta``
     excludes 0 **and** ``|delta| >= min_effect`` (default 0.002).  The CI is the
     example-sampling noise of the suite (the scorer adds none); ``min_effect`` keeps a
     very large suite from alarming on a change nobody would act on.

   Both directions alarm: a jump up is as suspicious as a drop (copying, padding).
4. The movers: examples ranked by the largest ``|delta F|`` over the rouge types, with
   their candidate texts from both runs and the references, read back from each run's input
   (the ``input`` section of its ``_run.json``, through :mod:`pipeline.io.readers`); the texts
   are not stored in the run folder, so if an input has moved the movers are listed
   without texts and ``texts_error`` says why.

Exit statuses of ``rouge-pipeline compare``: 0 inside the band, 1 moved, 2 error.
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


def load_run(url: str, storage_options: dict | None = None) -> RunData:
    """A finished run (``_SUCCESS``): its ``_run.json``, statistics and per-example scores."""
    from pipeline.io.paths import get_fs
    from pipeline.io.writers import OldLayoutError, check_layout, is_complete

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
        fs, path = get_fs(f"{url}/scores", storage_options)
        files = sorted(p for p in fs.find(path) if p.rsplit("/", 1)[-1].startswith("part-")) if fs.exists(path) else []
        tables = []
        for p in files:
            with fs.open(p, "rb") as f:
                tables.append(pq.read_table(f).replace_schema_metadata(None))
    except CompareError:
        raise
    except (OSError, ValueError) as e:
        raise CompareError(f"{url}: cannot read the run ({e})") from e
    if tables:
        df = pa.concat_tables(tables, promote_options="default").to_pandas()
    else:
        df = pd.DataFrame({"id": pd.Series([], dtype=object), "system": pd.Series([], dtype=object)})
    return RunData(url, info, read_json(f"{url}/stats/stats.json", storage_options),
                   read_json(f"{url}/_summary.json", storage_options), df)


# --------------------------------------------------------------------------- statistics
def paired_bootstrap(keys: list[str], d: np.ndarray, seed: int, n_boot: int) -> np.ndarray:
    """Replicate means ``(n_boot, k)`` of the columns of ``d`` (n, k) under Poisson(1)
    weights derived from ``(seed, key, replicate)``; chunked over examples."""
    from pipeline.stats.poisson import example_bases, poisson_weights

    n, k = d.shape
    sw = np.zeros(n_boot)
    swd = np.zeros((n_boot, k))
    bases = example_bases(keys, seed)
    for lo in range(0, n, _CHUNK):
        w = poisson_weights(bases[lo:lo + _CHUNK], n_boot)
        sw += w.sum(axis=1)
        swd += w @ d[lo:lo + _CHUNK]
    with np.errstate(invalid="ignore", divide="ignore"):
        return swd / sw[:, None]


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


def compare(base: RunData, new: RunData, band: float | None = None, min_effect: float = DEFAULT_MIN_EFFECT,
            confidence: float = 0.95, n_boot: int = 1000, n_perm: int = 2000, seed: int = 12345,
            top: int = 10, alarm_stats=("fmeasure",), texts: bool = True, only_list: int = 20) -> dict:
    """The comparison as a JSON-able dict (see the module docstring); ``result["moved"]``."""
    types = [t for t in base.rouge_types if t in new.rouge_types]
    if not types:
        raise CompareError(f"no rouge type in common ({base.rouge_types} vs {new.rouge_types})")
    if band is not None and band < 0:
        raise CompareError("band must be >= 0")
    cols = [f"{t}_{s}" for t in types for s in STATS]
    bs = set(base.scores["system"].unique()) if len(base.scores) else set()
    ns = set(new.scores["system"].unique()) if len(new.scores) else set()
    rows, only, movers_all, reasons = [], [], [], []
    q = (1 - confidence) / 2
    for system in sorted(bs | ns):
        if system not in bs or system not in ns:
            where = "base" if system in bs else "new"
            only.append({"system": system, "only_in": where, "system_missing": True,
                         "n_only_base": int((base.scores["system"] == system).sum()) if where == "base" else 0,
                         "n_only_new": int((new.scores["system"] == system).sum()) if where == "new" else 0,
                         "only_base": [], "only_new": []})
            reasons.append(f"system {system!r} is only in the {where} run")
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
        ok = np.isfinite(B).all(axis=1) & np.isfinite(N).all(axis=1)
        m, B, N = m[ok], B[ok], N[ok]
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
                             "alarm": False, "status": "no common examples"})
                continue
            delta = float(D[:, c_i].mean())
            if reps is not None:
                lo, hi = np.nanquantile(reps[:, c_i], [q, 1 - q])
            else:
                lo = hi = float("nan")
            if band is not None:
                outside = abs(delta) > band
            else:
                outside = bool((lo > 0 or hi < 0) and abs(delta) >= min_effect)
            alarm = bool(outside and s in alarm_stats)
            status = ("moved up" if delta > 0 else "moved down") if outside else "inside"
            rows.append({"system": system, "type": t, "stat": s, "n": len(ids),
                         "base": float(B[:, c_i].mean()), "new": float(N[:, c_i].mean()), "delta": delta,
                         "ci_low": _f(lo), "ci_high": _f(hi), "p_value": _f(pvals[c_i]),
                         "alarm": alarm, "status": status})
            if alarm:
                reasons.append(f"{system or '(no system)'} {t} {s}: delta {delta:+.4f} "
                               f"[{lo:+.4f}, {hi:+.4f}] outside the band")
        # movers of this system
        fcols = [types.index(t) * 3 + 2 for t in types]
        if len(ids):
            dF = D[:, fcols]
            mag = np.abs(dF).max(axis=1)
            for j in np.flatnonzero(mag > 0):
                r = m.iloc[j]
                mv = {"system": system, "id": ids[j], "max_abs_delta_f": float(mag[j]),
                      "delta_f": {t: float(dF[j, k]) for k, t in enumerate(types)},
                      "base_f": {t: float(B[j, f]) for t, f in zip(types, fcols)},
                      "new_f": {t: float(N[j, f]) for t, f in zip(types, fcols)},
                      "cand_tokens": [int(r["cand_tokens_base"]), int(r["cand_tokens_new"])],
                      "diagnostics": {}}
                for dc in DIAG_NAMES:
                    if dc + "_base" in r.index and dc + "_new" in r.index:
                        mv["diagnostics"][dc] = [_nan_none(r[dc + "_base"]), _nan_none(r[dc + "_new"])]
                movers_all.append(mv)
    movers_all.sort(key=lambda x: (-x["max_abs_delta_f"], x["system"], x["id"]))
    movers = movers_all[:top]
    n_changed = len(movers_all)
    result = {
        "base": base.url, "new": new.url,
        "base_signature": base.signature, "new_signature": new.signature,
        "same_signature": base.signature == new.signature,
        "rouge_types": types,
        "band": {"mode": "fixed" if band is not None else "noise", "band": band,
                 "min_effect": None if band is not None else min_effect, "confidence": confidence,
                 "n_boot": n_boot, "n_perm": n_perm, "seed": seed, "alarm_stats": list(alarm_stats),
                 "ci": "paired Poisson bootstrap (weights from seed, system, id)",
                 "test": "paired sign-flip permutation test"},
        "rows": rows, "only_in_one": only, "n_changed_examples": n_changed, "movers": movers,
        "reasons": reasons,
    }
    result["moved"] = bool(reasons)
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
    from pipeline.io.readers import InputSpec
    from pipeline.redaction import without_redacted

    cfg = info.get("config", {})
    inp = dict(cfg.get("input") or {})
    inp["storage_options"] = without_redacted({**(cfg.get("storage_options") or {}),
                                               **(inp.get("storage_options") or {})})
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


def format_result(result: dict, stats=("fmeasure",), width: int = 100) -> str:
    """The terminal table (F rows by default), the verdict, the movers and the one-run ids."""
    head = ["system", "type", "stat", "n", "base", "new", "delta", "CI", "p", "status"]
    lines = []
    for r in result["rows"]:
        if r["stat"] not in stats:
            continue
        lines.append([r["system"] or '""', r["type"], r["stat"][0].upper(), str(r["n"]), _fmt(r["base"], ".4f"),
                      _fmt(r["new"], ".4f"), _fmt(r["delta"]), f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]",
                      _fmt(r["p_value"], ".4f"), ("ALARM " if r["alarm"] else "") + r["status"]])
    widths = [max(len(head[i]), *(len(l[i]) for l in lines)) if lines else len(head[i]) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    b = result["band"]
    band = (f"fixed band |delta F| <= {b['band']}" if b["mode"] == "fixed" else
            f"noise band: {int(b['confidence'] * 100)}% paired bootstrap CI excludes 0 and |delta F| >= "
            f"{b['min_effect']}")
    out.append("")
    out.append(f"band: {band} (n_boot {b['n_boot']}, n_perm {b['n_perm']}, seed {b['seed']})")
    if not result["same_signature"]:
        out.append(f"WARNING: different signatures\n  base: {result['base_signature']}\n  new:  "
                   f"{result['new_signature']}")
    for o in result["only_in_one"]:
        if o["system_missing"]:
            out.append(f"system {o['system']!r}: only in the {o['only_in']} run")
        else:
            out.append(f"system {o['system']!r}: {o['n_only_base']} ids only in base "
                       f"{o['only_base'][:5]}{' ...' if o['n_only_base'] > 5 else ''}, {o['n_only_new']} only in new "
                       f"{o['only_new'][:5]}{' ...' if o['n_only_new'] > 5 else ''}")
    out.append(f"changed examples: {result['n_changed_examples']}")
    if result["movers"]:
        out.append("")
        out.append(f"examples that moved most (top {len(result['movers'])}):")
        for k, m in enumerate(result["movers"], 1):
            d = ", ".join(f"{t} {v:+.3f}" for t, v in m["delta_f"].items())
            out.append(f"{k:>3}. [{m['system']}] {m['id']}: {d}; tokens {m['cand_tokens'][0]} -> {m['cand_tokens'][1]}")
            for name in ("base_candidate", "new_candidate"):
                text = m.get(name)
                if text is not None:
                    t = " ".join(text.split())
                    out.append(f"       {name.split('_')[0]:>4}: {t[:width]}{'...' if len(t) > width else ''}")
        if result.get("texts_error"):
            out.append(f"  (texts unavailable: {result['texts_error']})")
    out.append("")
    out.append("MOVED: " + "; ".join(result["reasons"]) if result["moved"] else "no change: inside the band")
    return "\n".join(out)
