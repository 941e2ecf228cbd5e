"""The run folder's names: every file the run format writes, and nothing else knows them.

Run folder (any fsspec URL)::

    _run.json                      redacted config, signature, config hash, plan settings (written first)
    _plan.json                     the units (from the input listing), input fingerprints; reused on resume
    _done/unit-UUUUU-SSSS.json     one completion marker per slice (unit U's slice S): its counts and files
    scores/system-<s>/part-UUUUU-SSSS.parquet   per-example scores (pinned schema), one file per slice and
                                   system (not Hive's system=<s>: the column is in the files; LAYOUT)
    quarantine/part-UUUUU-SSSS.parquet  records that could not be scored, with a reason (slice 0 of a unit)
    stats/stats.parquet, stats/stats.json  corpus statistics per system, type and stat
    stats/bootstrap_exact.{parquet,json}   rouge-score's BootstrapAggregator (stats.bootstrap: exact)
    rouge155_corpus.json           ROUGE-1.5.5's printed averages (profile rouge155)
    _summary.json                  rows, quarantined by reason, systems, tasks, seconds, pairs/s, signature;
                                   parts: every part file with its rows and bytes (what readers hold the
                                   folder to: runfolder.whole)
    _LEASE.json                    the run holding the folder (outputs.lease.Lease; removed at the end)
    _SUCCESS                       written last, after the parts are verified (docs/run-folder.md)
    _gate.json                     the gate's verdict on this run, written by compare after _SUCCESS (records.py)
    _accepted.json                 a person accepted this run's change: who, when, why (rouge-pipeline accept)
    _dask.log                      a failed run's Dask log lines (worker tracebacks; not on the terminal)
"""
from __future__ import annotations

import re

from pipeline.io.writers import escape_system, is_temp_name

# Written into _run.json; a folder with another (or none: before issue 17) is not resumed, nor reused.
# 7: the scores hold each row's line_digest and cost (a --reuse run skips unchanged lines unparsed);
# 6: _summary.json (and each marker) holds a content hash of every part, checked by --reuse;
# 5: text_digest also covers the run's signature and, with diagnostics, the source (issue 30);
# 4: the scores hold a text_digest per example (issue 27); 3: parts and markers named by
# (unit, slice); 2 named them by a global task number.
RUN_FORMAT = 7
# The run folder's layout (``_run.json`` "layout"): 2 = ``scores/system-<s>/``; 1 (no key) was
# ``scores/system=<s>/``, which pandas and pyarrow cannot read as one dataset.
LAYOUT = 2
# The format of a slice's completion marker (``_done/unit-UUUUU-SSSS.json``): 5 holds its unit,
# slice, the unit's slice count, counts, files, config hash and plan id (its statistics are
# recomputed from its parts on resume); 4 the same per global task (``unit-XXXXX.json``); 3 without
# config hash and plan id; 2 in layout 1 (``system=`` folders); 1 also held the statistics.
# Part of the config hash: a run folder with markers of another format is not resumed.
MARKER_FORMAT = 5
# _plan.json: the units (2 held the tasks, cut by a plan pass)
PLAN_FORMAT = 3

RUN_INFO = "_run.json"
PLAN = "_plan.json"
SUMMARY = "_summary.json"
SUCCESS = "_SUCCESS"
LEASE = "_LEASE.json"
GATE = "_gate.json"           # the gate's verdict on the run (docs/regressions.md)
ACCEPTED = "_accepted.json"   # a change accepted on purpose: the run starts a new history
DASK_LOG = "_dask.log"        # a failed run's Dask log lines: worker tracebacks (execution.dasklogs)
ROUGE155_CORPUS = "rouge155_corpus.json"
DONE = "_done"
SCORES = "scores"
QUARANTINE = "quarantine"
STATS = "stats"
# the run's own folders: every file in them is one the run wrote (names.is_run_file, a part
# its _summary.json lists); a reader refuses a run holding anything else there
RUN_FOLDERS = (DONE, SCORES, QUARANTINE, STATS)
STATS_PARQUET = "stats/stats.parquet"
STATS_JSON = "stats/stats.json"
EXACT_PARQUET = "stats/bootstrap_exact.parquet"
EXACT_JSON = "stats/bootstrap_exact.json"
SYSTEM_PREFIX = "system-"
PART_PREFIX = "part-"   # a readers' part file in scores/: any file so named, as every reader took it
META_SIGNATURE = "rouge_pipeline.signature"
META_CONFIG_HASH = "rouge_pipeline.config_hash"  # in every part file's metadata

_RUN_FILE = re.compile(r"""^(?:
      _run\.json | _plan\.json | _summary\.json | _SUCCESS | _LEASE\.json | rouge155_corpus\.json
    | _gate\.json | _accepted\.json | _dask\.log
    | _done/unit-\d{5,}(?:-\d{4,})?\.json
    | scores/system[-=][^/]*/part-\d{5,}(?:-\d{4,})?\.parquet
    | quarantine/part-\d{5,}(?:-\d{4,})?\.parquet
    | stats/(?:stats|bootstrap_exact)\.(?:parquet|json)
)$""", re.X)
# the folders of ours a killed atomic write can leave a temp file in
_TEMP_DIR = re.compile(r"^(?:(?:_done|quarantine|stats|scores/system[-=][^/]*)/)?[^/]+$")
PART_FILE = re.compile(r"^part-\d+(?:-\d+)?\.parquet$")
# a part of this format: (unit, slice); older formats' parts (part-XXXXX) do not match
PART = re.compile(r"^(?:scores/system-[^/]*|quarantine)/part-(\d{5,})-(\d{4,})\.parquet$")
_MARKER = re.compile(r"^unit-(\d{5,})-(\d{4,})\.json$")
# what the run writes, for the input-glob check (a system folder, a part, every fixed name)
SAMPLE_FILES = (RUN_INFO, PLAN, SUMMARY, SUCCESS, LEASE, ROUGE155_CORPUS, GATE, ACCEPTED,
                "_done/unit-00000-0000.json", "scores/system-/part-00000-0000.parquet",
                "scores/system-x/part-00000-0000.parquet", "quarantine/part-00000-0000.parquet", STATS_PARQUET, STATS_JSON, EXACT_PARQUET, EXACT_JSON)


def is_temp_file(rel: str) -> bool:
    """A killed atomic write's temp file (:func:`pipeline.io.writers.is_temp_name`) in a folder of ours."""
    return bool(_TEMP_DIR.match(rel)) and is_temp_name(rel.rsplit("/", 1)[-1])


def is_run_file(rel: str) -> bool:
    """Whether ``rel`` (relative to the run folder) is a file the run format writes."""
    return bool(_RUN_FILE.match(rel)) or is_temp_file(rel)


def is_leftover(rel: str) -> bool:
    """What a folder may hold and still count as empty: a lease left behind, temp files."""
    return rel == LEASE or is_temp_file(rel)


def _index(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {v!r}")
    return v


def part_name(unit_index: int, slice_index: int = 0) -> str:
    """``part-00007-0002.parquet``: unit 7's slice 2.  Named by the data (the unit from the input
    listing, the slice from that unit's own cost split), so whoever reads a unit writes it."""
    return f"part-{_index(unit_index, 'unit_index'):05d}-{_index(slice_index, 'slice_index'):04d}.parquet"


def part_order(name: str) -> tuple:
    """The sort key of a part file name: (unit, slice) as numbers (input order past 99999 units)."""
    m = re.match(r"^part-(\d+)(?:-(\d+))?\.parquet$", name.rsplit("/", 1)[-1])
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (float("inf"), name)


def is_part_name(base: str) -> bool:
    """Whether a file name (no folder) is read as a part of ``scores/`` (every reader's rule)."""
    return base.startswith(PART_PREFIX)


def part_sort_key(path: str) -> tuple:
    """The order parts are read in: by folder (a system's, as its full path sorts), then
    :func:`part_order` (input order)."""
    folder, _, base = path.rpartition("/")
    return (folder + "/", part_order(base))


def parse_marker(base: str) -> tuple[int, int] | None:
    """(unit, slice) of a marker's file name of this format, else None."""
    m = _MARKER.match(base)
    return (int(m.group(1)), int(m.group(2))) if m else None


_DATASET = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]*$")


def partition_path(run_url: str, dataset: str, system: str) -> str:
    """``f"{run_url}/{dataset}/system-{escaped}/"``: every Parquet reader (pandas, pyarrow,
    Dask, polars, duckdb) reads ``{run_url}/{dataset}`` whole, ``system`` from the files."""
    if not isinstance(dataset, str) or not _DATASET.match(dataset) or dataset in (".", ".."):
        raise ValueError(f"dataset must be a plain folder name ([A-Za-z0-9_.-]), got {dataset!r}")
    return f"{run_url.rstrip('/')}/{dataset}/{SYSTEM_PREFIX}{escape_system(system)}/"


def url(run_url: str, rel: str) -> str:
    return f"{run_url.rstrip('/')}/{rel}"


def marker_rel(unit_index: int, slice_index: int) -> str:
    """``_done/unit-UUUUU-SSSS.json``: a slice's completion marker, relative to the run folder."""
    return f"{DONE}/unit-{_index(unit_index, 'unit_index'):05d}-{_index(slice_index, 'slice_index'):04d}.json"


def marker_url(run_url: str, unit_index: int, slice_index: int) -> str:
    return url(run_url, marker_rel(unit_index, slice_index))


def is_marker_file(rel: str) -> bool:
    """Whether ``rel`` is a completion marker of this or an older format (``_done/unit-*.json``)."""
    return rel.startswith(f"{DONE}/") and bool(_RUN_FILE.match(rel))


def score_part_url(run_url: str, system: str, unit_index: int, slice_index: int) -> str:
    return partition_path(run_url, SCORES, system) + part_name(unit_index, slice_index)


def quarantine_part_url(run_url: str, unit_index: int, slice_index: int) -> str:
    return url(run_url, f"{QUARANTINE}/{part_name(unit_index, slice_index)}")


def describe(files: list[str], limit: int = 5) -> str:
    more = f" and {len(files) - limit} more" if len(files) > limit else ""
    return ", ".join(files[:limit]) + more
