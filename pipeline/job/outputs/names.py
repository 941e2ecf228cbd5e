"""The run folder's names: every file the run format writes, and nothing else knows them.

Run folder (any fsspec URL)::

    _run.json                      redacted config, signature, config hash, plan settings (written first)
    _plan.json                     the tasks (units cut by estimated cost), input fingerprints; reused on resume
    _done/unit-XXXXX.json          one completion marker per task: its counts and files
    scores/system-<s>/part-XXXXX.parquet   per-example scores (pinned schema), one file per task and system
                                   (not Hive's system=<s>: the column is in the files; LAYOUT)
    quarantine/part-XXXXX.parquet  records that could not be scored, with a reason
    stats/stats.parquet, stats/stats.json  corpus statistics per system, type and stat
    stats/bootstrap_exact.{parquet,json}   rouge-score's BootstrapAggregator (stats.bootstrap: exact)
    rouge155_corpus.json           ROUGE-1.5.5's printed averages (profile rouge155)
    _summary.json                  rows, quarantined by reason, systems, tasks, seconds, pairs/s, signature
    _LEASE.json                    the run holding the folder (outputs.lease.Lease; removed at the end)
    _SUCCESS                       written last, after the parts are verified (docs/run-folder.md)
"""
from __future__ import annotations

import re

from pipeline.io.writers import escape_system, is_temp_name

# Written into _run.json; a folder with another (or none: before issue 17) is not resumed.
RUN_FORMAT = 2
# The run folder's layout (``_run.json`` "layout"): 2 = ``scores/system-<s>/``; 1 (no key) was
# ``scores/system=<s>/``, which pandas and pyarrow cannot read as one dataset.
LAYOUT = 2
# The format of a task's completion marker (``_done/unit-XXXXX.json``): 4 holds its counts, files,
# config hash and plan id (its statistics are recomputed from its parts on resume); 3 the same
# without config hash and plan id; 2 the same in layout 1 (``system=`` folders); 1 also held the
# statistics.  Part of the config hash: a run folder with markers of another format is not resumed.
MARKER_FORMAT = 4

RUN_INFO = "_run.json"
PLAN = "_plan.json"
SUMMARY = "_summary.json"
SUCCESS = "_SUCCESS"
LEASE = "_LEASE.json"
ROUGE155_CORPUS = "rouge155_corpus.json"
DONE = "_done"
SCORES = "scores"
QUARANTINE = "quarantine"
STATS_PARQUET = "stats/stats.parquet"
STATS_JSON = "stats/stats.json"
EXACT_PARQUET = "stats/bootstrap_exact.parquet"
EXACT_JSON = "stats/bootstrap_exact.json"
SYSTEM_PREFIX = "system-"
META_SIGNATURE = "rouge_pipeline.signature"
META_CONFIG_HASH = "rouge_pipeline.config_hash"  # in every part file's metadata

_RUN_FILE = re.compile(r"""^(?:
      _run\.json | _plan\.json | _summary\.json | _SUCCESS | _LEASE\.json | rouge155_corpus\.json
    | _done/unit-\d{5,}\.json
    | scores/system[-=][^/]*/part-\d{5,}\.parquet
    | quarantine/part-\d{5,}\.parquet
    | stats/(?:stats|bootstrap_exact)\.(?:parquet|json)
)$""", re.X)
# the folders of ours a killed atomic write can leave a temp file in
_TEMP_DIR = re.compile(r"^(?:(?:_done|quarantine|stats|scores/system[-=][^/]*)/)?[^/]+$")
PART_FILE = re.compile(r"^part-\d+\.parquet$")
PART = re.compile(r"^(?:scores/system-[^/]*|quarantine)/part-(\d{5,})\.parquet$")
# what the run writes, for the input-glob check (a system folder, a part, every fixed name)
SAMPLE_FILES = (RUN_INFO, PLAN, SUMMARY, SUCCESS, LEASE, ROUGE155_CORPUS,
                "_done/unit-00000.json", "scores/system-/part-00000.parquet", "scores/system-x/part-00000.parquet",
                "quarantine/part-00000.parquet", STATS_PARQUET, STATS_JSON, EXACT_PARQUET, EXACT_JSON)


def is_temp_file(rel: str) -> bool:
    """A killed atomic write's temp file (:func:`pipeline.io.writers.is_temp_name`) in a folder of ours."""
    return bool(_TEMP_DIR.match(rel)) and is_temp_name(rel.rsplit("/", 1)[-1])


def is_run_file(rel: str) -> bool:
    """Whether ``rel`` (relative to the run folder) is a file the run format writes."""
    return bool(_RUN_FILE.match(rel)) or is_temp_file(rel)


def is_leftover(rel: str) -> bool:
    """What a folder may hold and still count as empty: a lease left behind, temp files."""
    return rel == LEASE or is_temp_file(rel)


def part_name(unit_index: int) -> str:
    """``part-00007.parquet``: lexicographic order = unit order (up to 99999, then still unique)."""
    if isinstance(unit_index, bool) or not isinstance(unit_index, int) or unit_index < 0:
        raise ValueError(f"unit_index must be a non-negative integer, got {unit_index!r}")
    return f"part-{unit_index:05d}.parquet"


_DATASET = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9_.\-]*$")


def partition_path(run_url: str, dataset: str, system: str) -> str:
    """``f"{run_url}/{dataset}/system-{escaped}/"``: every Parquet reader (pandas, pyarrow,
    Dask, polars, duckdb) reads ``{run_url}/{dataset}`` whole, ``system`` from the files."""
    if not isinstance(dataset, str) or not _DATASET.match(dataset) or dataset in (".", ".."):
        raise ValueError(f"dataset must be a plain folder name ([A-Za-z0-9_.-]), got {dataset!r}")
    return f"{run_url.rstrip('/')}/{dataset}/{SYSTEM_PREFIX}{escape_system(system)}/"


def url(run_url: str, rel: str) -> str:
    return f"{run_url.rstrip('/')}/{rel}"


def marker_url(run_url: str, index: int) -> str:
    return url(run_url, f"{DONE}/unit-{index:05d}.json")


def score_part_url(run_url: str, system: str, index: int) -> str:
    return partition_path(run_url, SCORES, system) + part_name(index)


def quarantine_part_url(run_url: str, index: int) -> str:
    return url(run_url, f"{QUARANTINE}/{part_name(index)}")


def describe(files: list[str], limit: int = 5) -> str:
    more = f" and {len(files) - limit} more" if len(files) > limit else ""
    return ", ".join(files[:limit]) + more
