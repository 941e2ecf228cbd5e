"""Finished runs read back for comparison (issues #7, #18): :class:`RunData` (a run's
``_run.json``, statistics and per-example scores), the finders of a run's history, and the
texts of chosen examples as they were scored (:func:`run_texts`: kept in the run, or read again
from its input and shown only when they match the run's ``text_digest``, issue #27)."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.errors import CompareError, OldLayoutError, RunFolderError
from pipeline.io.input_spec import InputSpec
from pipeline.io.paths import get_fs
from pipeline.io.readers import plan_units, read_unit
from pipeline.job.digest import run_digest
from pipeline.redaction import without_redacted, without_redacted_url
from pipeline.runfolder import read as run_folder
from pipeline.runfolder import records


@dataclass
class RunData:
    url: str
    info: dict            # _run.json
    stats: dict | None    # stats/stats.json
    summary: dict | None  # _summary.json
    scores: pd.DataFrame  # every system's per-example scores
    record: dict | None = None    # _gate.json: the gate's verdict on this run (None: never judged)
    accepted: dict | None = None  # _accepted.json: a person accepted its change (who, when, why)

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
        """``{(system, type): mean F}`` over the run's finite scores (kept: a history is read nightly)."""
        cached = getattr(self, "_means", None)
        if cached is not None and cached[0] is self.scores:
            return cached[1]
        out = {}
        self._means = (self.scores, out)
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
    the score and diagnostics columns; :func:`pipeline.runfolder.read.read_all_scores`)."""
    table = run_folder.read_all_scores(url, storage_options)
    if table is not None:
        return table.to_pandas()
    return pd.DataFrame({"id": pd.Series([], dtype=object), "system": pd.Series([], dtype=object)})


def load_run(url: str, storage_options: dict | None = None) -> RunData:
    """A finished run (:func:`pipeline.runfolder.read.open_run`): its ``_run.json``, statistics
    and per-example scores."""
    url = str(url).rstrip("/")
    try:
        run = run_folder.open_run(url, storage_options)
        table = run.scores()   # checked: each part's rows, their sum, no (system, id) twice
        df = table.to_pandas() if table is not None else read_scores(url, storage_options)
        return RunData(url, run.info, run.stats(), run.summary(), df, records.read_verdict(url, storage_options),
                       records.read_accepted(url, storage_options))
    except (RunFolderError, OldLayoutError) as e:
        raise CompareError(str(e)) from None
    except (OSError, ValueError) as e:
        raise CompareError(f"{url}: cannot read the run ({e})") from e


def same_run(a: str, b: str) -> bool:
    """Whether two run URLs name the same folder (local paths compared absolute, ``file://`` dropped)."""
    def norm(u: str) -> str:
        u = str(u).rstrip("/").removeprefix("file://")
        return u if "://" in u else os.path.abspath(u)

    return norm(a) == norm(b)


def find_runs(specs: list[str], storage_options: dict | None = None, exclude: str | None = None,
              notes: list[str] | None = None) -> list[RunData]:
    """The finished runs named by ``specs`` (run folders, folders of run folders such as a nightly
    root, or globs of either), sorted by their recorded time (then URL); ``exclude`` (a run URL)
    and unfinished folders are left out, the unfinished run folders (a ``_run.json``, no
    ``_SUCCESS``) named in one line appended to ``notes``.  A spec that names nothing is an error."""
    urls: list[str] = []
    unfinished: list[str] = []
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
            if run_folder.has_success(fs, p):
                hit.append(p)
            elif run_folder.is_unfinished(fs, p):
                unfinished.append(url_of(p).rstrip("/"))
            elif fs.isdir(p):
                for c in sorted(fs.ls(p, detail=False)):
                    if run_folder.has_success(fs, c):
                        hit.append(c)
                    elif run_folder.is_unfinished(fs, c):
                        unfinished.append(url_of(c).rstrip("/"))
        if not hit and not found:
            raise CompareError(f"history: nothing matches {spec}")
        urls += [url_of(p).rstrip("/") for p in hit]
    _note_unfinished(unfinished, notes)
    seen, runs = set(), []
    for u in urls:
        if u in seen or (exclude is not None and same_run(u, exclude)):
            continue
        seen.add(u)
        runs.append(load_run(u, storage_options))
    runs.sort(key=lambda r: (r.recorded_time, r.url))
    return runs


def _note_unfinished(urls: list[str], notes: list[str] | None) -> None:
    if urls and notes is not None:
        urls = sorted(set(urls))
        notes.append(f"{len(urls)} unfinished run(s) (no _SUCCESS) left out of the history: "
                     + ", ".join(urls[:3]) + (" ..." if len(urls) > 3 else ""))


def _earlier_siblings(new_url: str, storage_options: dict | None):
    """``(fs, [(url, path)])``: the sibling folders of ``new_url`` whose names sort before it,
    oldest first (dated nightly folders)."""
    new_url = str(new_url).rstrip("/")
    parent, name = new_url.rsplit("/", 1) if "/" in new_url else (".", new_url)
    fs, path = get_fs(parent, storage_options)
    try:
        children = sorted(fs.ls(path, detail=False))
    except FileNotFoundError:
        return fs, []
    named = ((c.rstrip("/").rsplit("/", 1)[-1], c) for c in children)
    return fs, [(f"{parent}/{base}", c) for base, c in named if base < name]


def previous_runs(new_url: str, storage_options: dict | None = None, notes: list[str] | None = None) -> list[RunData]:
    """The finished sibling run folders of ``new_url`` whose names sort before it (dated nightly
    folders), oldest first: the history of a nightly run.  Unfinished ones are named in ``notes``."""
    fs, earlier = _earlier_siblings(new_url, storage_options)
    _note_unfinished([u for u, c in earlier if run_folder.is_unfinished(fs, c)], notes)
    return [load_run(u, storage_options) for u, c in earlier if run_folder.has_success(fs, c)]


def previous_heads(new_url: str, storage_options: dict | None = None) -> list[RunData]:
    """:func:`previous_runs` without their scores (an empty ``scores``): each finished earlier
    sibling's ``_run.json``, summary and the gate's records, oldest first (cheap: no part is read)."""
    fs, earlier = _earlier_siblings(new_url, storage_options)
    out = []
    for url, c in earlier:
        if run_folder.has_success(fs, c):
            info = run_folder.read_run_info(url, storage_options)
            if isinstance(info, dict):
                out.append(RunData(url, info, None, run_folder.read_summary(url, storage_options), pd.DataFrame(),
                                   records.read_verdict(url, storage_options),
                                   records.read_accepted(url, storage_options)))
    return out


def history_runs(new: RunData, specs: list[str] | None = None, previous: bool = False,
                 storage_options: dict | None = None, notes: list[str] | None = None) -> list[RunData]:
    """The history of ``new``: the runs of ``specs`` (:func:`find_runs`) and, with ``previous``,
    its earlier sibling folders (:func:`previous_runs`) -- both together: their union --, each
    once, keeping only runs that began before ``new`` (:attr:`RunData.order`; the new run and
    later runs are never part of its band), sorted by their recorded time (then URL).  What was
    left out (unfinished runs, runs that began after ``new``) is said in lines appended to ``notes``."""
    runs = (previous_runs(new.url, storage_options, notes) if previous else []) + \
        (find_runs(specs, storage_options, notes=notes) if specs else [])
    seen, out, later = [], [], []
    for r in runs:
        if same_run(r.url, new.url) or any(same_run(r.url, u) for u in seen):
            continue
        seen.append(r.url)
        (later if r.order >= new.order else out).append(r)
    if later and notes is not None:
        notes.append(f"{len(later)} history run(s) began after {new.url} and are left out of its band and trend: "
                     + ", ".join(r.url for r in later[:3]) + (" ..." if len(later) > 3 else ""))
    out.sort(key=lambda r: (r.recorded_time, r.url))
    return out


def _input_spec(info: dict, storage_options: dict | None = None):
    """The run's input as recorded in ``_run.json``, to open again: the recorded storage options and
    URLs without any redacted value (:func:`pipeline.redaction.without_redacted`, ``without_redacted_url``:
    a ``<redacted>`` placeholder never reaches fsspec), the caller's ``storage_options`` on top (its
    credentials; the environment supplies the rest)."""
    cfg = info.get("config", {})
    inp = dict(cfg.get("input") or {})
    inp["storage_options"] = {**without_redacted(cfg.get("storage_options")),
                              **without_redacted(inp.get("storage_options")), **(storage_options or {})}
    cwd = info.get("cwd")
    for key in ("paths", "candidates", "references"):
        v = inp.get(key)
        if v:
            vs = [without_redacted_url(u) for u in ([v] if isinstance(v, str) else list(v))]
            if cwd:   # relative local paths are relative to where the run was started, not to here
                vs = [os.path.join(cwd, u) if "://" not in u and not os.path.isabs(u) else u for u in vs]
            inp[key] = vs[0] if isinstance(v, str) else vs
    return InputSpec.from_config(inp)


def read_texts(info: dict, wanted: set[tuple[str, str]],
               storage_options: dict | None = None) -> dict[tuple[str, str], dict]:
    """``{(system, id): {"candidate", "references", "source"}}`` for the wanted examples,
    read from the run's input (every unit is read once; only the wanted rows are kept);
    ``storage_options``: the reader's own, over the run's recorded ones (:func:`_input_spec`)."""
    spec = _input_spec(info, storage_options)
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


# why an example's texts are not shown (one short phrase per run side; format.py prints it)
INPUT_CHANGED = "input changed since the run"
NO_DIGEST = "the run has no text digests (an older run format)"


def _rows_of(run: RunData, wanted: set[tuple[str, str]]) -> pd.DataFrame:
    s = run.scores
    if not len(s):
        return s
    hit = s["id"].isin({i for _, i in wanted})
    rows = s[hit]
    return rows[[k in wanted for k in zip(rows["system"], rows["id"])]]


def _kept(rows: pd.DataFrame) -> dict[tuple[str, str], dict]:
    return {(r.system, r.id): {"candidate": r.candidate, "references": [str(x) for x in r.references],
                               "source": None}
            for r in rows[["system", "id", "candidate", "references"]].itertuples(index=False)}


def run_texts(run: RunData, wanted: set[tuple[str, str]],
              storage_options: dict | None = None) -> tuple[dict, dict]:
    """``({key: texts}, {key: why not})`` for the wanted ``(system, id)`` keys: the texts the run
    kept (``output.keep_texts``), else those read again from its input (:func:`read_texts`) whose
    digest is the run's ``text_digest`` (:mod:`pipeline.job.digest`); never a text the run did
    not score (:data:`INPUT_CHANGED`, :data:`NO_DIGEST`).  Errors of the input's reading propagate.
    ``storage_options``: the reader's own (credentials), over the run's recorded ones."""
    rows = _rows_of(run, wanted)
    if "candidate" in rows.columns and "references" in rows.columns:
        return _kept(rows), {}
    if "text_digest" not in rows.columns:
        return {}, dict.fromkeys(wanted, NO_DIGEST)
    digests = {(s_, i): int(d) for s_, i, d in zip(rows["system"], rows["id"], rows["text_digest"])}
    read = read_texts(run.info, wanted, storage_options)
    out, why = {}, {}
    for key in wanted:
        t = read.get(key)
        if t is not None and key in digests and run_digest(run.info, t["candidate"], t["references"],
                                                           t["source"]) == digests[key]:
            out[key] = t
        else:
            why[key] = INPUT_CHANGED
    return out, why
