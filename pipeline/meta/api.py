"""``correlate``: how well a run's ROUGE agrees with human judgments, at each level, with each
coefficient, with bootstrap confidence intervals (docs/meta-evaluation.md)."""
from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field as dc_field

import numpy as np
import pandas as pd

from pipeline.errors import MetaError, NothingToCorrelateError, OldLayoutError, RunFolderError
from pipeline.meta import coefficients, levels, resample
from pipeline.meta.data import Judged, judged
from pipeline.meta.human import judgments, read_human
from pipeline.meta.signature import correlation_signature
from pipeline.runfolder.read import open_run
from pipeline.stats.keys import DEFAULT_SEED

ROW_COLUMNS = ["type", "stat", "level", "coefficient", "r", "ci_low", "ci_high", "n_used", "n_skipped",
               "n_too_few", "n_systems", "n_docs", "n_boot_valid", "ci_partial", "too_few", "note", "signature"]
GROUP = {"summary": "document", "system": "system", "global": "cell"}


@dataclass
class CorrelationResult:
    """``rows``: one row per rouge type x statistic x level x coefficient (:data:`ROW_COLUMNS`;
    ``n_used``/``n_skipped``: documents at the summary level, systems at the system level, cells
    globally; ``n_too_few``: the groups -- documents, or the level's one group -- with fewer than
    :data:`pipeline.meta.levels.MIN_ITEMS` items; ``too_few``: every group had too few, so ``r`` is
    NaN; ``note``: why ``r`` is NaN; ``ci_partial``: the interval rests on fewer valid replicates,
    ``n_boot_valid``, than asked); ``signature``: the settings shared by every row (each row's own is in its
    ``signature`` column); ``replicates``: ``{(level, coefficient): (n_boot, columns)}`` bootstrap
    values in ``columns`` order (for :func:`pipeline.meta.compare_metrics` and your own tests)."""

    rows: pd.DataFrame
    signature: str
    settings: dict
    columns: list[str] = dc_field(default_factory=list)
    replicates: dict = dc_field(default_factory=dict, repr=False)
    data: Judged | None = dc_field(default=None, repr=False)

    def to_dict(self) -> dict:
        rows = self.rows.astype(object).where(self.rows.notna(), None).to_dict("records")
        return {"signature": self.signature, "settings": self.settings, "rows": rows}


def load_scores(run_or_frame, storage_options: dict | None = None) -> tuple[pd.DataFrame, str]:
    """Per-example scores and the ROUGE signature: a run folder (read through
    :func:`pipeline.runfolder.read.open_run`) or a DataFrame (``attrs["signature"]`` if set)."""
    if isinstance(run_or_frame, pd.DataFrame):
        return run_or_frame, str(run_or_frame.attrs.get("signature", "unknown"))
    if not isinstance(run_or_frame, (str, os.PathLike)):
        raise MetaError(f"not a run folder or a DataFrame: {type(run_or_frame).__name__}")
    url = os.fspath(run_or_frame)
    try:
        run = open_run(url, storage_options)
        table = run.scores()
    except (RunFolderError, OldLayoutError) as e:
        raise MetaError(str(e)) from None
    if table is None:
        raise MetaError(f"{url}: the run has no scores")
    return table.to_pandas(), str((run.info or {}).get("signature") or "unknown")


def human_frame(human, field: str | None, storage_options=None, system_field="system", id_field="id"):
    """The human scores by (system, id): a file (:func:`read_human`), or a DataFrame with
    ``system``, ``id`` and ``field`` (annotations aggregated the same way)."""
    if isinstance(human, pd.DataFrame):
        name = field or "human"
        if name not in human.columns and "." not in name:
            raise MetaError(f"the human DataFrame has no column {name!r}")
        return judgments(human.to_dict("records"), name, "the human DataFrame", system_field, id_field)
    if not field:
        raise MetaError("--field: name the human judgment to correlate with (e.g. human.relevance)")
    return read_human(os.fspath(human), field, storage_options, system_field, id_field)


def check_options(levels_, coefficients_, resample_, n_boot, confidence, workers):
    lv = coefficients.names(levels_, levels.LEVELS, "level")
    co = coefficients.check(coefficients_)
    if resample_ not in resample.RESAMPLE:
        raise MetaError(f"resample {resample_!r}: choose from {', '.join(resample.RESAMPLE)}")
    if not isinstance(n_boot, numbers.Integral) or isinstance(n_boot, bool) or n_boot < 0:
        raise MetaError(f"n_boot {n_boot!r}: a whole number >= 0 (0: no confidence intervals)")
    if not 0 < confidence < 1:
        raise MetaError(f"confidence {confidence!r}: between 0 and 1 (e.g. 0.95)")
    if not isinstance(workers, numbers.Integral) or workers < 1:
        raise MetaError(f"workers {workers!r}: a whole number >= 1")
    return lv, co


def correlate(run_or_frame, human, field: str | None = None, levels=levels.LEVELS,
              coefficients=coefficients.DEFAULT_COEFFICIENTS, doc_key: str | None = None,
              resample: str = "both", n_boot: int = 1000, confidence: float = 0.95, seed: int = DEFAULT_SEED,
              types=None, stats=None, workers: int = 1, storage_options: dict | None = None,
              human_system: str = "system", human_id: str = "id") -> CorrelationResult:
    """Correlate a run's (or a DataFrame's) per-example ROUGE with human judgments.

    ``human``: a file (JSONL/CSV/Parquet, the judged JSONL itself too) or a DataFrame, by
    ``(system, id)`` (``human_system``, ``human_id`` name those fields); ``field`` the judgment
    (``human.relevance`` reaches into nested records).  ``levels`` and ``coefficients``: lists or
    comma-separated strings.  ``doc_key``: compare's document key.  ``resample``: ``"both"``,
    ``"systems"`` or ``"documents"``; ``n_boot`` replicates (0: no intervals); ``seed`` as the run
    statistics'.  ``types``/``stats`` restrict the metric columns.  ``workers`` threads compute the
    replicates (the same numbers with any count)."""
    lv, co = check_options(levels, coefficients, resample, n_boot, confidence, workers)
    coefficients_module_check()
    scores, rouge_sig = load_scores(run_or_frame, storage_options)
    hum = human_frame(human, field, storage_options, human_system, human_id)
    data = judged(scores, hum, doc_key, types, stats)
    common = dict(doc_key=doc_key, field=field or "human", n_systems=len(data.systems), n_docs=len(data.docs),
                  resample=resample, n_boot=n_boot, confidence=confidence, seed=seed, rouge=rouge_sig)
    rows, reps = [], {}
    for level in lv:
        prepared = resample_prepare(data, level, n_boot)
        for coef in co:
            sig = correlation_signature(coef, level, **common)
            boot = resample_replicates(prepared, coef, n_boot, resample, seed, workers)
            reps[(level, coef)] = boot
            for k, column in enumerate(data.columns):
                rows.append(_row(data, k, column, level, coef, boot, confidence, sig))
    nothing_to_correlate(rows)
    pooled = hum["n_rows"] if "n_rows" in hum.columns else pd.Series([], dtype=int)
    settings = {"levels": list(lv), "coefficients": list(co), "doc_key": doc_key or "id", "field": field,
                "resample": resample, "n_boot": n_boot, "confidence": confidence, "seed": seed,
                "systems": len(data.systems), "docs": len(data.docs), "examples": data.n_examples,
                "human_unmatched": data.n_unmatched, "scored_unjudged": data.n_unjudged,
                "human_averaged": int((pooled > 1).sum()), "human_averaged_rows": int(pooled[pooled > 1].sum()),
                "rouge_signature": rouge_sig}
    shared = correlation_signature(None, None, **common)
    return CorrelationResult(pd.DataFrame(rows, columns=ROW_COLUMNS), shared, settings, list(data.columns),
                             reps, data)


def coefficients_module_check() -> None:
    coefficients.scipy_stats()   # the one-line error before any reading when scipy is missing


def resample_prepare(data: Judged, level: str, n_boot: int):
    return resample.Prepared(data.X, data.H, level) if n_boot > 0 else None


def resample_replicates(prepared, coef, n_boot, how, seed, workers) -> np.ndarray | None:
    return resample.replicates(prepared, coef, n_boot, how, seed, workers) if prepared is not None else None


def _row(data: Judged, k: int, column: str, level: str, coef: str, boot, confidence: float, sig: str) -> dict:
    r, used, skipped, too_few = levels.LEVEL_FUNCTIONS[level](data.X[k], data.H, coef)
    lo, hi, valid = resample.interval(boot[:, k], confidence) if boot is not None else (np.nan, np.nan, 0)
    t, s = data.split(column)
    groups = len(data.docs) if level == "summary" else 1
    all_few = too_few == groups
    return {"type": t, "stat": s, "level": level, "coefficient": coef, "r": r, "ci_low": lo, "ci_high": hi,
            "n_used": used, "n_skipped": skipped, "n_too_few": too_few, "n_systems": len(data.systems),
            "n_docs": len(data.docs), "n_boot_valid": valid,
            "ci_partial": bool(boot is not None and 0 < valid < len(boot)), "too_few": bool(all_few),
            "note": None if np.isfinite(r) else why_undefined(level, used, all_few), "signature": sig}


def why_undefined(level: str, used: int, too_few: bool) -> str:
    """One line: why a level has no number for a column."""
    need = levels.MIN_ITEMS
    if level == "summary":
        return (f"no document has {need} or more systems with both scores (two points always correlate +-1)"
                if too_few else f"every document skipped (constant scores, or fewer than {need} systems)")
    if too_few:
        return (f"{used} {GROUP[level]}(s) with both scores: a correlation needs at least {need} "
                "(two points always correlate +-1)")
    return "the metric or the human scores are constant"


def nothing_to_correlate(rows: list[dict]) -> None:
    """The one-line error when no row has a number (nothing would be evidence)."""
    if rows and not any(np.isfinite(r["r"]) for r in rows):
        per_level = dict.fromkeys(f"{r['level']}: {r['note']}" for r in rows)
        raise NothingToCorrelateError("nothing to correlate at any level: " + "; ".join(per_level))
