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
   "no change".  Ids present in the new run only are listed.  Examples whose status is
   ``too_long`` (NaN scores) in either run are left out of the statistics.
2. For every system, rouge type and statistic (P/R/F), the paired differences
   ``d_i = new_i - base_i`` give the mean difference ``delta``, a percentile confidence
   interval from a paired **Poisson bootstrap** whose weights are a pure function of
   ``(seed, system, id, replicate)`` (:mod:`pipeline.stats.poisson`, the same weights as the
   run statistics), and the two-sided p-value of a paired **sign-flip permutation test**.
3. The band, on the F-measure rows (``alarm_stats``), in this order of preference.  Every number a
   band uses is read on the **compared examples** (ids only in the new run never dilute a move).
   ``m`` is the number of rows judged (systems x rouge types x ``alarm_stats``); the night's
   false-alarm rate ``alpha`` (default 1%) is shared by them (Bonferroni: ``alpha / m`` a row).

   * ``band=X``: a fixed absolute band; moved iff ``|delta| > X``.
   * **replicates** (``replicates=[runs]``: repeated runs of the base's build): the run-to-run
     variation ``sd`` of the means of the base and its replicates; moved iff
     ``|new - centre| > k * sd`` and ``>= min_effect``.
   * **history** (``history=[runs]``: the in-control runs, :mod:`pipeline.gate.control`; at least
     ``min_history`` of them holding the system): each compared example against its own last
     ``window`` in-control scores (:func:`pipeline.gate.bands.sign_test`): tonight's examples
     below (above) their median are counted and held against a binomial whose rate is learned
     from the history, one-sided at ``alpha / m / 2``; moved iff that rejects **and** the mean
     moved at least ``min_effect`` that way.  The t prediction interval of the mean at the same
     level, clipped to [0, 1], is drawn with it.  (Night-to-night noise of a mean is
     heavy-tailed: a few outputs change a lot; counting examples is honest about it.)
   * otherwise the **bootstrap band**: moved iff the paired bootstrap CI of ``delta`` at
     ``1 - (1 - confidence) / m`` excludes 0 **and** ``|delta| >= min_effect``; within a short
     history (e.g. after an acceptance) also a paired sign test at ``alpha / m``.

   Four verdicts per row: "moved up", "moved down", "no change", and "inconclusive" when the
   smallest uniform move of every compared example the band could detect (``detectable``) is
   larger than ``min_effect`` (too little history, too few examples).  The run: "moved" if a
   row moved, else "inconclusive" if a row is, else "no change"; "not comparable" first.
4. The movers: examples ranked by the largest ``|delta F|`` over the rouge types, with
   their candidate texts from both runs and the references, as each run scored them: kept in
   the run (``output.keep_texts``), else read back from each run's input (relative input paths
   resolve against the working directory recorded in the run's ``_run.json``) and shown only
   when they match the run's ``text_digest``; a side whose text is not shown says why
   (``texts_note``: the input changed since the run), and if an input has moved the movers are
   listed without texts and ``texts_error`` says why.

Each step is a function: :func:`screen_runs` and :func:`align` (1), :func:`paired_tests` (2),
:func:`judge_row` (3), :func:`movers` (4); :func:`compare` runs them and :func:`verdict` sums up.
The options are a :class:`CompareOptions` (or its fields as keywords of :func:`compare`).

Exit statuses of ``rouge-pipeline compare``: 0 no change, 1 moved, 2 error, 3 not comparable,
4 inconclusive (:func:`pipeline.gate.control.exit_status`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from pipeline.gate import DEFAULT_MIN_EFFECT
from pipeline.gate.bands import (BAND_METHODS, DEFAULT_ALPHA, DEFAULT_K, DEFAULT_METHOD, DEFAULT_WINDOW, MIN_HISTORY,
                                 history_band, outside_chart, paired_bootstrap, prediction_band, replicate_band,
                                 sign_flip_pvalues, sign_test)
from pipeline.gate.format import system_label
from pipeline.gate.runs import CompareError, RunData, run_texts, same_run
from pipeline.scoring.diagnostics import DIAG_NAMES
from pipeline.scoring.types import STATS
from pipeline.stats.keys import DEFAULT_SEED, example_key

__all__ = ["VERDICTS", "Aligned", "CompareOptions", "Evidence", "Judgement", "RunMeans", "align", "history_judgement", "attach_texts", "compare", "judge_row",
           "movers", "paired_tests", "screen_runs", "settings_check", "signature_diff", "verdict"]


@dataclass(frozen=True)
class CompareOptions:
    """How :func:`compare` judges (the module docstring); the ``compare`` command's flags."""
    band: float | None = None           # a fixed band on |delta|; None: history, replicates or bootstrap
    min_effect: float = DEFAULT_MIN_EFFECT
    confidence: float = 0.95
    n_boot: int = 1000                  # 0: no bootstrap (no CI)
    n_perm: int = 2000                  # 0: no permutation test (no p-value)
    seed: int = DEFAULT_SEED
    top: int = 10                       # movers kept in the result
    alarm_stats: tuple[str, ...] = ("fmeasure",)
    texts: bool = True                  # read the movers' texts back from the runs' inputs
    only_list: int = 20                 # ids listed per system for the ids in one run only
    min_coverage: float = 1.0
    allow_different_settings: bool = False
    k: float = DEFAULT_K
    window: int = DEFAULT_WINDOW
    min_history: int = MIN_HISTORY
    method: str = DEFAULT_METHOD
    alpha: float = DEFAULT_ALPHA        # the history band: the share of unchanged nights that alarm anywhere

    def check(self) -> None:
        """A :class:`CompareError` for a value no band can use."""
        if self.band is not None and self.band < 0:
            raise CompareError("band must be >= 0")
        if not 0 <= self.min_coverage <= 1:
            raise CompareError("min_coverage must be in [0, 1]")
        if self.k <= 0 or self.window < 1 or self.min_history < 2:
            raise CompareError("k must be > 0, window >= 1 and min_history >= 2")
        if not 0 < self.alpha < 1:
            raise CompareError("alpha (the false-alarm rate per night) must be in (0, 1)")
        if self.band is not None and not math.isfinite(self.band):
            raise CompareError("band must be a finite number")
        if self.method not in BAND_METHODS:
            raise CompareError(f"unknown band method {self.method!r} ({', '.join(BAND_METHODS)})")


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


def compare(base: RunData, new: RunData, options: CompareOptions | None = None, *,
            history: list[RunData] | None = None, replicates: list[RunData] | None = None, **settings) -> dict:
    """The comparison as a JSON-able dict (see the module docstring); ``result["verdict"]`` is
    ``"no change"``, ``"moved"``, ``"inconclusive"`` or ``"not comparable"``.  ``settings`` are fields of
    :class:`CompareOptions` (``compare(base, new, band=0.01)``) and win over ``options``."""
    opts = replace(options or CompareOptions(), **settings)
    types = [t for t in base.rouge_types if t in new.rouge_types]
    if not types:
        raise CompareError(f"no rouge type in common ({base.rouge_types} vs {new.rouge_types})")
    opts.check()
    history, replicates, notes, blockers = screen_runs(base, new, history, replicates, opts)
    means = RunMeans.of(base, new, history, replicates)
    cols = [f"{t}_{s}" for t in types for s in STATS]
    bs, ns = _systems(base), _systems(new)
    rows, only, coverage, reasons, changed, chart = [], [], [], [], [], {}
    aligned = []
    for system in sorted(bs | ns):
        al = align(base, new, system, system in bs, system in ns, cols, opts)
        only += [al.only] if al.only else []
        coverage += [al.coverage] if al.coverage else []
        notes += [al.note] if al.note else []
        blockers += [al.blocker] if al.blocker else []
        aligned += [al] if al.frame is not None else []   # else the system is in one run only
    m = sum(len(al.frame) > 0 for al in aligned) * len(types) * len(opts.alarm_stats)
    ev = replace(Evidence.of(history, replicates, cols), level=opts.alpha / max(m, 1), m=max(m, 1))
    for al in aligned:
        for row, judged, reason in _system_rows(al, cols, ev, opts):
            rows.append(row)
            if judged is not None and judged.chart is not None:
                chart[(al.system, row["type"])] = judged.chart
            reasons += [reason] if reason else []
        changed += movers(al, types)
    if not coverage and not blockers:
        blockers.append("the base run has no scored example")
    changed.sort(key=lambda x: (-x["max_abs_delta_f"], x["system"], x["id"]))
    result = _result(base, new, types, opts, history, replicates, rows=rows, only=only, coverage=coverage,
                     changed=changed, blockers=blockers, reasons=reasons, notes=notes,
                     trend=_trend(history, new, means, sorted(bs | ns), types), chart=chart, evidence=ev)
    if opts.texts and result["movers"]:
        attach_texts(result, base, new)
    return result


def _systems(run: RunData) -> set:
    return set(run.scores["system"].unique()) if len(run.scores) else set()


def screen_runs(base: RunData, new: RunData, history: list[RunData] | None, replicates: list[RunData] | None,
                opts: CompareOptions) -> tuple[list[RunData], list[RunData], list[str], list[str]]:
    """Settings first: ``(history, replicates, notes, blockers)``.  Other settings in the base are a
    blocker (or a note when allowed); history runs of other settings are left out of the band (a
    deliberate change starts a new history), as is the new run itself; a replicate of other settings
    is a blocker unless allowed."""
    history = [h for h in (history or []) if not same_run(h.url, new.url)]
    replicates = list(replicates or [])
    blockers: list[str] = []
    notes = settings_check(base.signature, new.signature, opts.allow_different_settings, blockers)
    other = [h for h in history if h.signature != new.signature]
    if other:
        history = [h for h in history if h.signature == new.signature]
        notes.append(f"{len(other)} history run(s) made with other settings left out of the band "
                     f"({', '.join(h.url for h in other[:3])}{' ...' if len(other) > 3 else ''})")
    for h in replicates:
        if h.signature != new.signature and not opts.allow_different_settings:
            blockers.append(f"replicate run {h.url} was made with other settings ("
                            + "; ".join(signature_diff(h.signature, new.signature)) + ")")
    return history, replicates, notes, blockers


@dataclass(frozen=True)
class RunMeans:
    """``{(system, type): mean F}`` of the base, the new run and the history runs over each run's own
    examples: the trend charts only.  Every band uses :class:`Evidence` (the compared examples)."""
    base: dict
    new: dict
    history: list[dict]
    replicates: list[dict]

    @classmethod
    def of(cls, base: RunData, new: RunData, history: list[RunData], replicates: list[RunData]) -> RunMeans:
        return cls(base.means(), new.means(), [h.means() for h in history], [r.means() for r in replicates])


def _by_system(run: RunData, cols: list[str]) -> dict[str, pd.DataFrame]:
    """A run's scores per system, indexed by id (the columns ``cols`` that it has); kept on the run,
    which a nightly history reads again for every row."""
    key = tuple(cols)
    cached = getattr(run, "_gate_by_system", None)
    if cached is not None and cached[0] is run.scores and cached[1] == key:
        return cached[2]
    df = run.scores
    keep = [c for c in cols if c in df.columns]
    out = {s: g.set_index("id")[keep] for s, g in df.groupby("system", sort=True)} if len(df) else {}
    run._gate_by_system = (run.scores, key, out)
    return out


@dataclass(frozen=True)
class Evidence:
    """What the bands hold a row against, read on the compared examples only (item 3 of issue 27):
    the history runs' and replicates' scores per system by id, and ``level``: the night's
    false-alarm rate ``alpha`` shared by the ``m`` rows judged (Bonferroni)."""
    history: list[dict]
    replicates: list[dict]
    level: float = 1.0
    m: int = 1
    stacks: dict = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, history: list[RunData], replicates: list[RunData], cols: list[str]) -> Evidence:
        return cls([_by_system(h, cols) for h in history], [_by_system(r, cols) for r in replicates])

    def matrix(self, runs: list[dict], system: str, ids: list[str], col: str) -> np.ndarray:
        """``(runs holding the system, len(ids))`` scores of ``col`` on ``ids`` (NaN: not in that run)."""
        key = (id(runs), system)
        if key not in self.stacks:   # each run's system read once on the compared ids, every column
            frames = [r[system].reindex(ids) for r in runs if system in r]
            self.stacks[key] = {c: np.vstack([f[c].to_numpy(np.float64) for f in frames])
                                for c in (frames[0].columns if frames else [])}
        got = self.stacks[key].get(col)
        return got if got is not None else np.zeros((0, len(ids)))


@dataclass(frozen=True)
class Aligned:
    """One system's examples in both runs (step 1).  ``frame`` is ``None`` when the system is in
    one run only; else it holds the compared examples (in both runs, finite scores in both), by
    id, ``base``/``new`` their scores ``(n, columns)`` and ``delta`` the paired differences."""
    system: str
    only: dict | None = None       # the ids (or the whole system) in one run only
    coverage: dict | None = None
    blocker: str | None = None
    note: str | None = None
    frame: pd.DataFrame | None = None
    base: np.ndarray | None = None
    new: np.ndarray | None = None
    delta: np.ndarray | None = None

    @property
    def ids(self) -> list[str]:
        return self.frame["id"].tolist()

    @property
    def keys(self) -> list[str]:
        """The bootstrap key of every compared example."""
        return [example_key(self.system, i) for i in self.ids]


def align(base: RunData, new: RunData, system: str, in_base: bool, in_new: bool, cols: list[str],
          opts: CompareOptions) -> Aligned:
    """Align one system's examples by id: the ids in one run only, its coverage (the share of its
    base examples compared) and a blocker below ``min_coverage``.  Examples without finite scores in
    either run (``too_long``) are left out."""
    label = system_label(system)
    if not in_base:
        return Aligned(system, only={"system": system, "only_in": "new", "system_missing": True, "n_only_base": 0,
                                     "n_only_new": int((new.scores["system"] == system).sum()), "only_base": [],
                                     "only_new": []},
                       note=f"system {label!r} is only in the new run (not compared)")
    if not in_new:
        n_b = int((base.scores["system"] == system).sum())
        return Aligned(system, only={"system": system, "only_in": "base", "system_missing": True, "n_only_base": n_b,
                                     "n_only_new": 0, "only_base": [], "only_new": []},
                       coverage={"system": system, "n_base": n_b, "n_new": 0, "n_common": 0, "coverage": 0.0},
                       blocker=f"system {label!r} is only in the base run (coverage 0 of {n_b} examples)")
    b = base.scores[base.scores["system"] == system]
    n = new.scores[new.scores["system"] == system]
    m = b.merge(n, on="id", suffixes=("_base", "_new"), how="outer", indicator=True)
    ob = sorted(m.loc[m["_merge"] == "left_only", "id"].tolist())
    on = sorted(m.loc[m["_merge"] == "right_only", "id"].tolist())
    only = None
    if ob or on:
        only = {"system": system, "only_in": None, "system_missing": False, "n_only_base": len(ob),
                "n_only_new": len(on), "only_base": ob[:opts.only_list], "only_new": on[:opts.only_list]}
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
    blocker = None
    if n_common == 0 or cov < opts.min_coverage:
        unscored = f", {n_unscored} more without finite scores in one of the runs" if n_unscored else ""
        blocker = (f"system {label!r}: coverage {cov:.1%} ({n_common} of {len(b)} base examples "
                   f"compared{unscored}) is below --min-coverage {opts.min_coverage:.0%}")
    return Aligned(system, only=only, blocker=blocker, frame=m, base=B, new=N, delta=N - B,
                   coverage={"system": system, "n_base": int(len(b)), "n_new": int(len(n)), "n_common": n_common,
                             "coverage": cov})


def paired_tests(al: Aligned, opts: CompareOptions, m: int = 1) -> tuple[list, list, np.ndarray]:
    """Step 2, per column of the aligned scores: the paired-bootstrap CI of the mean difference at
    ``confidence`` for the whole night, i.e. ``1 - (1 - confidence) / m`` for each of the ``m`` rows
    judged (Bonferroni; NaN with ``n_boot`` 0) and the sign-flip p-value (NaN with ``n_perm`` 0), as
    ``(ci_low, ci_high, p)``."""
    d = al.delta
    reps = paired_bootstrap(al.keys, d, opts.seed, opts.n_boot) if opts.n_boot > 0 else None
    pvals = sign_flip_pvalues(d, opts.seed, opts.n_perm) if opts.n_perm > 0 else np.full(d.shape[1], np.nan)
    q = (1 - opts.confidence) / 2 / m
    lo, hi = [], []
    for c in range(d.shape[1]):
        c_lo, c_hi = np.nanquantile(reps[:, c], [q, 1 - q]) if reps is not None else (float("nan"), float("nan"))
        lo.append(c_lo)
        hi.append(c_hi)
    return lo, hi, pvals


@dataclass(frozen=True)
class Judgement:
    """A row held against its band (step 3)."""
    band: str                  # "fixed", "replicates", "history" or "bootstrap"
    outside: bool
    direction: float           # > 0: moved up (the delta, or the mean's deviation from the reference)
    chart: dict | None = None  # replicates and history: the chart, with the mean held against it ("value")
    detectable: float = 0.0    # the smallest move of every compared example this band would alarm on


def judge_row(al: Aligned, c_i: int, col: str, lo: float, hi: float, ev: Evidence,
              opts: CompareOptions) -> Judgement:
    """The band of one row (column ``c_i`` of the aligned scores, named ``col``), in the module
    docstring's order of preference, whether the row is outside it, and the smallest move it could
    detect; history and replicate bands hold only F rows.  Every number is read on the compared
    examples."""
    delta = float(al.delta[:, c_i].mean())
    if opts.band is not None:
        return Judgement("fixed", abs(delta) > opts.band, delta, detectable=opts.band)
    fmeasure = col.endswith("_fmeasure")
    hist = ev.matrix(ev.history, al.system, al.ids, col)[-opts.window:] if fmeasure else np.zeros((0, 0))
    reps = ev.matrix(ev.replicates, al.system, al.ids, col) if fmeasure else np.zeros((0, 0))
    if len(reps):
        return _replicate_judgement(al, c_i, hist, reps, opts)
    if len(hist) >= opts.min_history:
        return history_judgement(al.new[:, c_i], hist, ev.level, opts)
    q_lo = -lo if math.isfinite(lo) else math.inf
    q_hi = hi if math.isfinite(hi) else math.inf
    outside = bool((lo > 0 or hi < 0) and abs(delta) >= opts.min_effect)
    if ev.history and outside:   # a short history (a new one, e.g. after an acceptance): nights, not examples
        outside = _paired_flip_test(al.delta[:, c_i], ev.level, opts)
    return Judgement("bootstrap", outside, delta, detectable=max(opts.min_effect, q_lo, q_hi))


def _paired_flip_test(d: np.ndarray, level: float, opts: CompareOptions) -> bool:
    """Two nights of one build are exchangeable: each example's difference is as likely with either
    sign.  Whether the sign-flip test rejects at ``level`` (two-sided), with enough trials to
    resolve it (at least ``20 / level``); the unchanged examples flip nothing and are left out."""
    nz = d[d != 0]
    if not len(nz):
        return False
    trials = max(opts.n_perm, int(math.ceil(20 / level)))
    return bool(sign_flip_pvalues(nz[:, None], opts.seed, trials)[0] <= level)


def _row_means(m: np.ndarray) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # a run holding none of the ids: NaN, dropped
        v = np.nanmean(m, axis=1) if m.size else np.zeros(0)
    return [float(x) for x in v if math.isfinite(x)]


def history_judgement(new: np.ndarray, hist: np.ndarray, level: float, opts: CompareOptions) -> Judgement:
    """Tonight's examples against their own in-control history (:func:`sign_test` at ``level``),
    with the t prediction band of the mean drawn for the chart."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # an example in no history run: no reference
        st = sign_test(hist, new, level)
    chart = prediction_band(_row_means(hist), level, opts.window, opts.method)
    chart.update(value=st["value"], reference=st["reference"], sign_test=st)
    dev = st["value"] - st["reference"]
    down = st["p_down"] <= level / 2 and dev <= -opts.min_effect
    up = st["p_up"] <= level / 2 and dev >= opts.min_effect
    able = st["need_down"] is not None and st["need_up"] is not None
    return Judgement("history", bool(down or up), dev, chart, opts.min_effect if able else math.inf)


def _replicate_judgement(al: Aligned, c_i: int, hist: np.ndarray, reps: np.ndarray,
                         opts: CompareOptions) -> Judgement:
    hv = _row_means(hist)
    centre = history_band(hv, opts.k, opts.window, opts.method)["centre"] if len(hv) >= opts.min_history else None
    chart = replicate_band([float(al.base[:, c_i].mean()), *_row_means(reps)], opts.k, centre)
    value = float(al.new[:, c_i].mean())
    chart["value"] = value
    return Judgement("replicates", outside_chart(value, chart, opts.min_effect), value - chart["centre"], chart,
                     max(opts.min_effect, opts.k * chart["sd"]))


def _system_rows(al: Aligned, cols: list[str], ev: Evidence, opts: CompareOptions):
    """``(row, judgement, alarm reason)`` for every column of one system (steps 2 and 3)."""
    system, label = al.system, system_label(al.system)
    if not len(al.frame):
        for c in cols:
            t, s = c.rsplit("_", 1)
            yield ({"system": system, "type": t, "stat": s, "n": 0, "base": None, "new": None, "delta": None,
                    "ci_low": None, "ci_high": None, "p_value": None, "alarm": False, "status": "no common examples",
                    "band": None, "detectable": None}, None, None)
        return
    lo, hi, pvals = paired_tests(al, opts, ev.m)
    n = len(al.frame)
    for c_i, c in enumerate(cols):
        t, s = c.rsplit("_", 1)
        delta = float(al.delta[:, c_i].mean())
        row = {"system": system, "type": t, "stat": s, "n": n,
               "base": float(al.base[:, c_i].mean()), "new": float(al.new[:, c_i].mean()), "delta": delta,
               "ci_low": _f(lo[c_i]), "ci_high": _f(hi[c_i]), "p_value": _f(pvals[c_i])}
        j = judge_row(al, c_i, c, lo[c_i], hi[c_i], ev, opts)
        row["band"] = j.band
        row["detectable"] = _f(j.detectable)
        if j.chart is not None:
            row.update({"band_centre": j.chart["centre"], "band_low": j.chart["low"], "band_high": j.chart["high"],
                        "band_sd": j.chart["sd"], "band_runs": j.chart["n_runs"]})
            if "sign_test" in j.chart:
                row["sign_test"] = {k: _f(v) if isinstance(v, float) else v for k, v in j.chart["sign_test"].items()}
        row["alarm"] = bool(j.outside and s in opts.alarm_stats)
        row["status"] = _status(j, opts, s in opts.alarm_stats)
        yield row, j, _reason(label, row, j, lo[c_i], hi[c_i]) if row["alarm"] else None


def _status(j: Judgement, opts: CompareOptions, judged: bool = True) -> str:
    """``moved up``/``moved down`` outside the band; ``inconclusive`` when the smallest move the band
    could detect is larger than ``min_effect`` (a fixed band is what it is: never inconclusive).  A
    row of a statistic that is not judged (P, R) says ``inside`` or moved, for information."""
    if j.outside:
        return "moved up" if j.direction > 0 else "moved down"
    if not judged:
        return "inside"
    if j.band != "fixed" and not j.detectable <= opts.min_effect:
        return "inconclusive"
    return "no change"


def _reason(label: str, row: dict, j: Judgement, lo: float, hi: float) -> str:
    t, s = row["type"], row["stat"]
    if j.band == "history":
        st, c = j.chart["sign_test"], j.chart
        way = "down" if j.direction < 0 else "up"
        return (f"{label} {t} F: mean {c['value']:.4f} {row['status']} from {c['reference']:.4f} "
                f"(its examples' own history, {c['n_runs']} runs): {st[way]} of {st['n']} examples {way} "
                f"(p {st['p_' + way]:.2g}, in-control nights: fewer than {st['need_' + way]}; "
                f"band [{c['low']:.4f}, {c['high']:.4f}])")
    if j.chart is not None:
        c = j.chart
        return (f"{label} {t} F: mean {c['value']:.4f} {row['status']}, outside the {row['band']} band "
                f"[{c['low']:.4f}, {c['high']:.4f}] (centre {c['centre']:.4f}, {c['n_runs']} runs)")
    return (f"{label} {t} {s[0].upper()}: delta {row['delta']:+.4f} [{lo:+.4f}, {hi:+.4f}] {row['status']}, "
            f"outside the {row['band']} band")


def movers(al: Aligned, types: list[str]) -> list[dict]:
    """Step 4: the system's examples whose F moved in some rouge type, with the largest ``|delta F|``
    over the types, the F of both runs, the candidate token counts and the diagnostics of both."""
    if not len(al.frame):
        return []
    fcols = [types.index(t) * 3 + 2 for t in types]
    B, N, ids = al.base, al.new, al.ids
    dF = al.delta[:, fcols]
    mag = np.abs(dF).max(axis=1)
    out = []
    for j in np.flatnonzero(mag > 0):
        r = al.frame.iloc[j]
        mv = {"system": al.system, "id": ids[j], "max_abs_delta_f": float(mag[j]),
              "delta_f": {t: float(dF[j, k_]) for k_, t in enumerate(types)},
              "base_f": {t: float(B[j, f]) for t, f in zip(types, fcols)},
              "new_f": {t: float(N[j, f]) for t, f in zip(types, fcols)},
              "cand_tokens": [int(r["cand_tokens_base"]), int(r["cand_tokens_new"])],
              "diagnostics": {}}
        for dc in DIAG_NAMES:
            if dc + "_base" in r.index and dc + "_new" in r.index:
                mv["diagnostics"][dc] = [_nan_none(r[dc + "_base"]), _nan_none(r[dc + "_new"])]
        out.append(mv)
    return out


VERDICTS = ("no change", "moved", "not comparable", "inconclusive")


def verdict(blockers: list[str], reasons: list[str], rows: list[dict] | None = None,
            alarm_stats: tuple[str, ...] = ("fmeasure",)) -> str:
    """``"not comparable"`` before anything else, then ``"moved"`` when a row alarmed, then
    ``"inconclusive"`` when a judged row could not have seen a move of ``min_effect``."""
    if blockers:
        return "not comparable"
    if reasons:
        return "moved"
    if any(r["status"] == "inconclusive" for r in rows or [] if r["stat"] in alarm_stats):
        return "inconclusive"
    return "no change"


def _trend(history: list[RunData], new: RunData, means: RunMeans, systems: list[str], types: list[str]) -> dict:
    """Each system's mean F over the history and the new run (the report's trend charts)."""
    trend = {"runs": [{"url": h.url, "time": h.recorded_time} for h in history]
             + [{"url": new.url, "time": new.recorded_time}],
             "means": {}}
    if history:
        for system in systems:
            for t in types:
                trend["means"].setdefault(system, {})[t] = [hm.get((system, t)) for hm in means.history] + \
                    [means.new.get((system, t))]
    return trend


def _result(base: RunData, new: RunData, types: list[str], opts: CompareOptions, history: list[RunData],
            replicates: list[RunData], *, rows, only, coverage, changed, blockers, reasons, notes, trend,
            chart, evidence: Evidence) -> dict:
    v = verdict(blockers, reasons, rows, opts.alarm_stats)
    result = {
        "base": base.url, "new": new.url,
        "base_signature": base.signature, "new_signature": new.signature,
        "same_signature": base.signature == new.signature,
        "rouge_types": types,
        "band": {"mode": "fixed" if opts.band is not None else "noise", "band": opts.band,
                 "min_effect": None if opts.band is not None else opts.min_effect, "confidence": opts.confidence,
                 "n_boot": opts.n_boot, "n_perm": opts.n_perm, "seed": opts.seed,
                 "alarm_stats": list(opts.alarm_stats),
                 "ci": "paired Poisson bootstrap (weights from seed, system, id)",
                 "test": "paired sign-flip permutation test",
                 "history": {"method": opts.method, "choice": BAND_METHODS[opts.method], "k": opts.k,
                             "window": opts.window, "min_history": opts.min_history,
                             "n_history_runs": len(history), "n_replicates": len(replicates),
                             "fallback": "paired-bootstrap band when fewer than min_history runs hold the system",
                             "alpha": opts.alpha, "rows_judged": evidence.m, "level_per_row": evidence.level,
                             "test": "each compared example against its own in-control history: one-sided "
                                     "binomial sign tests at level/2 each way, Bonferroni over the rows judged"}},
        "coverage": coverage, "min_coverage": opts.min_coverage,
        "allow_different_settings": opts.allow_different_settings,
        "rows": rows, "only_in_one": only, "n_changed_examples": len(changed), "movers": changed[:opts.top],
        "reasons": blockers + reasons, "not_comparable": blockers, "notes": notes,
        "verdict": v, "trend": trend,
        "chart": [{"system": s_, "type": t_, **c} for (s_, t_), c in sorted(chart.items())],
    }
    result["moved"] = v == "moved"
    result["inconclusive"] = v == "inconclusive"
    result["comparable"] = not blockers
    return result


def _nan_none(v):
    try:
        if v is None or pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return float(v)


def attach_texts(result: dict, base: RunData, new: RunData) -> None:
    """Each mover's candidates of both runs and its references, as each run scored them
    (:func:`run_texts`); a side whose text cannot be shown says why in ``texts_note``."""
    wanted = {(m["system"], m["id"]) for m in result["movers"]}
    errors = []
    got, why = {}, {}
    for name, run in (("base", base), ("new", new)):
        try:
            got[name], why[name] = run_texts(run, wanted)
        except Exception as e:  # the input moved or is unreadable: list the movers without texts
            got[name], why[name] = {}, {}
            errors.append(f"{name} input: {e}")
    for m in result["movers"]:
        key = (m["system"], m["id"])
        b, n = got["base"].get(key), got["new"].get(key)
        m["base_candidate"] = b["candidate"] if b else None
        m["new_candidate"] = n["candidate"] if n else None
        m["references"] = (n or b or {}).get("references")
        m["texts_note"] = {side: why[side][key] for side in ("base", "new") if key in why[side]}
    result["texts_error"] = "; ".join(errors) or None
