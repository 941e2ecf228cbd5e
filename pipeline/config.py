"""The run configuration: safe YAML, unknown keys refused, dotted ``key=value`` overrides.

Every key, its default and what it changes: docs/configuration.md (checked against these
classes by tests/repo/test_configuration_doc.py: add a row there with a new key).

```yaml
input:            # pipeline.io.input_spec.InputSpec    (layout, paths | candidates+references, format, columns, ...)
  layout: records
  paths: s3://bucket/corpus/*.jsonl.gz
output:
  url: s3://bucket/runs/nightly       # the run folder
  overwrite: false
  keep_texts: false                   # true: the parts also hold the candidate and references scored
scoring:
  rouge_types: [rouge1, rouge2, rougeL, rougeLsum]
  use_stemmer: false                  # rouge-score's default
  tokenizer: default                  # default | whitespace
  sentence_splitter: newline          # newline | punkt | sentencex (rougeLsum)
  multi_ref: max_f                    # max_f (rouge-score) | pooled/A, best_recall/B (ROUGE-1.5.5 -f) | mean
                                      #   (default: max_f; A with profile rouge155)
  alpha: 0.5                          # F = PR/((1-alpha)P + alpha R)
  profile: rouge-score-0.1.2          # rouge-score-0.1.2 (its numbers) | unicode (any script; README)
                                      #   | rouge155 (ROUGE-1.5.5's numbers; README "ROUGE-1.5.5 numbers")
  remove_stopwords: false             # rouge155: -s
  length_limit_words: null            # rouge155: -l N  (length_limit_bytes: -b N)
  language: en                        # ISO 639 code: unicode profile, Snowball stemmer, sentencex
  stemming: none                      # none | snowball (unicode profile; rouge-score: use_stemmer)
  cjk: chars                          # chars | segmenter (unicode profile: jieba for zh, newmm for th)
  diagnostics: true                   # per-example diagnostics columns (pipeline/scoring/diagnostics.py)
stats:
  seed: 12345                         # 0 .. 2**63-1 (2**32-1 with bootstrap: exact)
  n_boot: 1000                        # 0: no bootstrap; at most 20,000
  confidence: 0.95
  bootstrap: poisson                  # poisson (mergeable, partition-independent) | exact
execution:
  mode: auto                          # auto (in process below 32 MiB of input, else local) | local
                                      #   | scheduler | sync
  scheduler: null                     # address, for mode: scheduler (tcp://host:8786)
  n_workers: <cpu count>
  memory_limit: null                  # per worker, e.g. "4GB" (null: Dask's default)
  retries: 2
  target_rows: null                   # rows per work unit (null: one unit per input file, small files packed)
  target_cost: null                   # estimated cost per task, for the driver's planning
  worker_profile: false               # local mode: Dask's statistical profiler in the workers (the
                                      #   dashboard's Profile page); it cost ~10% of the job's throughput
  reuse: null                         # a previous run (same signature): its rows of unchanged examples
                                      #   are copied, the others scored (--reuse RUN)
  reuse_untrusted: refuse             # a reuse run that is not whole, or of another version: refuse
                                      #   (exit 2) | rescore (nothing reused, said in the log; nightly)
strict: false                         # true: any quarantined record fails the run
storage_options: {}                   # fsspec options for input and output (input.storage_options wins)
```

YAML is read safely, with the YAML 1.2 core schema (``pipeline.yaml12``: ``language: no`` is
Norwegian, not ``False``).  Every unknown key (at any depth) is an error naming the
dotted key and the closest allowed key.  ``to_dict()`` (the default) records storage-option keys
and only the values of a few known-harmless options; URLs lose their userinfo and query values
(``pipeline.redaction``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from pipeline import __version__, profiles, yaml12
from pipeline.checks import ConfigError, check_bool, check_choice, check_int, check_str, type_name
from pipeline.io.paths import check_keys, check_scheme
from pipeline.io.input_spec import InputSpec
from pipeline.runfolder import names as run_folder_names
from pipeline.runfolder.inputs import check_output_vs_inputs, input_urls
from pipeline.redaction import REDACTED, redact_record  # noqa: F401 - REDACTED: the recorded placeholder
from pipeline.settings import MULTI_REF, SENTENCE_SPLITTERS, TOKENIZERS, ScoringSettings  # noqa: F401
from pipeline.stats.keys import DEFAULT_SEED, MAX_N_BOOT

PROFILES = profiles.names()  # the built-in ones (pipeline.profiles.REGISTRY: any registered since)
# Settings of the unicode profile (#8); left out of the config hash at these defaults.
PROFILE_DEFAULTS = {"language": "en", "stemming": "none", "cjk": "chars"}
# Left out of the config hash at its default too (it adds columns, never changes a score).
HASH_DEFAULTS = {**PROFILE_DEFAULTS, "diagnostics": True}
# The ROUGE family settings (#6), also left out of the hash at their defaults.
FAMILY_DEFAULTS = {"alpha": 0.5, "remove_stopwords": False, "length_limit_words": None, "length_limit_bytes": None}
HASH_DEFAULTS.update(FAMILY_DEFAULTS)
BOOTSTRAPS = ("poisson", "exact")
MAX_SEED = 2**63 - 1         # stats.seed: stored as int64 in the statistics
MAX_SEED_EXACT = 2**32 - 1   # with stats.bootstrap: exact (NumPy's RandomState, as rouge-score)
MODES = ("auto", "local", "scheduler", "sync")


# the checks every section shares (pipeline.checks; also the scoring settings')
_type_name, _check_bool, _check_int, _check_choice, _check_str = type_name, check_bool, check_int, check_choice, check_str


@dataclass
class OutputConfig:
    url: str = ""
    overwrite: bool = False
    keep_texts: bool = False   # the scores' parts also hold the texts (compare's movers read them there)

    def validate(self):
        _check_str(self.url, "output.url")
        try:
            check_scheme(self.url, "output.url")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        _check_bool(self.overwrite, "output.overwrite")
        _check_bool(self.keep_texts, "output.keep_texts")


# the scoring section: the one validated, frozen settings type (pipeline.settings)
ScoringConfig = ScoringSettings


@dataclass
class StatsConfig:
    seed: int = DEFAULT_SEED
    n_boot: int = 1000
    confidence: float = 0.95
    bootstrap: str = "poisson"

    def validate(self):
        # bounds checked here, not after the scoring: the statistics store the seed as int64,
        # rouge-score's bootstrap (exact) seeds NumPy's RandomState (32 bits), and the
        # finalisation holds an n_boot x 1024 float64 block per system
        _check_int(self.seed, "stats.seed")
        _check_int(self.n_boot, "stats.n_boot")
        top = MAX_SEED_EXACT if self.bootstrap == "exact" else MAX_SEED
        if self.seed > top:
            raise ConfigError(f"stats.seed: must be <= {top}"
                              + (" with stats.bootstrap: exact" if self.bootstrap == "exact" else "")
                              + f", got {self.seed}")
        if self.n_boot > MAX_N_BOOT:
            raise ConfigError(f"stats.n_boot: must be <= {MAX_N_BOOT:,} (bootstrap replicates), got {self.n_boot:,}")
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c < 1:
            raise ConfigError(f"stats.confidence: expected a number between 0 and 1 (exclusive), got {c!r}")
        self.confidence = float(c)
        _check_choice(self.bootstrap, "stats.bootstrap", BOOTSTRAPS)


@dataclass
class ExecutionConfig:
    mode: str = "auto"  # auto: in process below driver.AUTO_LOCAL_MIN_BYTES of input, else local
    scheduler: str | None = None
    n_workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    memory_limit: str | int | None = None
    retries: int = 2
    target_rows: int | None = None
    target_cost: int | float | None = None
    unit_cache_mb: int | None = None  # not used; accepted and ignored, so configs that set it still load
    worker_profile: bool = False
    reuse: str | None = None   # a previous run: rows whose digest is unchanged are copied, not scored
    reuse_untrusted: str = "refuse"   # such a run that cannot be trusted: refuse the run | rescore every row

    def validate(self):
        _check_choice(self.mode, "execution.mode", MODES)
        _check_str(self.reuse, "execution.reuse", allow_none=True)
        _check_choice(self.reuse_untrusted, "execution.reuse_untrusted", ("refuse", "rescore"))
        if self.reuse is not None:
            try:
                check_scheme(self.reuse, "execution.reuse")
            except ValueError as e:
                raise ConfigError(str(e)) from None
        _check_str(self.scheduler, "execution.scheduler", allow_none=True)
        if self.mode == "scheduler" and not self.scheduler:
            raise ConfigError("execution.scheduler: an address is required with execution.mode: scheduler")
        _check_int(self.n_workers, "execution.n_workers", minimum=1)
        m = self.memory_limit
        if m is not None:
            if isinstance(m, bool) or not isinstance(m, (str, int)) or (isinstance(m, int) and m <= 0) or m == "":
                raise ConfigError(f"execution.memory_limit: expected a size like '4GB', 'auto' or a positive "
                                  f"number of bytes, got {m!r}")
        _check_int(self.retries, "execution.retries")
        _check_int(self.target_rows, "execution.target_rows", minimum=1, allow_none=True)
        _check_int(self.unit_cache_mb, "execution.unit_cache_mb", minimum=0, allow_none=True)
        _check_bool(self.worker_profile, "execution.worker_profile")
        t = self.target_cost
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0):
            raise ConfigError(f"execution.target_cost: expected a positive number, got {t!r}")


def _section_dict(section) -> dict:
    return section.to_dict() if isinstance(section, ScoringSettings) else dataclasses.asdict(section)


_SECTIONS = {"output": OutputConfig, "scoring": ScoringConfig, "stats": StatsConfig,
             "execution": ExecutionConfig}
_TOP_KEYS = ("input", "output", "scoring", "stats", "execution", "strict", "storage_options")


@dataclass
class RunConfig:
    input: dict = field(default_factory=dict)
    output: OutputConfig = field(default_factory=OutputConfig)
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    stats: StatsConfig = field(default_factory=StatsConfig)
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    strict: bool = False
    storage_options: dict = field(default_factory=dict)

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict | None) -> "RunConfig":
        d = {} if d is None else d
        try:
            check_keys(d, _TOP_KEYS, "")
            sections = {}
            for name, klass in _SECTIONS.items():
                sub = d.get(name) or {}
                allowed = [f.name for f in dataclasses.fields(klass)]
                check_keys(sub, allowed, name)
                sections[name] = klass(**sub)
        except ConfigError:
            raise
        except ValueError as e:
            raise ConfigError(str(e)) from None
        so = d.get("storage_options") or {}
        if not isinstance(so, dict):
            raise ConfigError(f"storage_options: expected a mapping, got {_type_name(so)}")
        inp = d.get("input")
        if not isinstance(inp, dict) or not inp:
            raise ConfigError("input: a mapping is required (layout, paths or candidates/references, ...)")
        cfg = cls(input=dict(inp), strict=d.get("strict", False), storage_options=dict(so), **sections)
        cfg.validate()
        return cfg

    def validate(self) -> "RunConfig":
        for name in _SECTIONS:
            getattr(self, name).validate()
        _check_bool(self.strict, "strict")
        try:
            check_output_vs_inputs(self.output.url, input_urls(self.input_spec()))
        except ConfigError:
            raise
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return self

    def input_spec(self) -> InputSpec:
        """The ``InputSpec``; top-level ``storage_options`` are the defaults for the input's."""
        d = dict(self.input)
        own = d.get("storage_options") or {}
        if not isinstance(own, dict):
            raise ConfigError(f"input.storage_options: expected a mapping, got {_type_name(own)}")
        d["storage_options"] = {**self.storage_options, **own}
        return InputSpec.from_config(d)

    # -- serialisation --------------------------------------------------------------
    def to_dict(self, redact: bool = True) -> dict:
        """Plain dict (YAML/JSON-able); as recorded (``pipeline.redaction.redact_record``) unless
        ``redact=False``."""
        out = {
            "input": json.loads(json.dumps(self.input)),
            **{name: _section_dict(getattr(self, name)) for name in _SECTIONS},
            "strict": self.strict,
            "storage_options": json.loads(json.dumps(self.storage_options, default=str)),
        }
        return redact_record(out) if redact else out

    def effective_dict(self) -> dict:
        """Every setting with its default filled in, redacted as the run record is: what
        ``rouge-pipeline score --print-config`` prints. Loaded back, it gives the same config hash."""
        out = self.to_dict(redact=False)
        own = self.input.get("storage_options") or {}
        spec = InputSpec.from_config({**self.input, "storage_options": own}).to_dict()
        if not own:
            spec.pop("storage_options")
        out["input"] = spec
        out = redact_record(out)
        for key in ("paths", "candidates", "references"):     # the layout's own keys only
            if out["input"].get(key) is None:
                out["input"].pop(key, None)
        return out

    def hashed_settings(self) -> dict:
        """The settings that change numbers or inputs (never output but `keep_texts`, execution or credentials),
        the statistics' format and the task markers' (a folder written with other formats is
        not resumed: its statistics would not merge with this run's, its markers not be read)."""
        from pipeline.stats.accumulator import BOOT_BUCKETS, FORMAT_VERSION  # loads numba: only when hashing

        spec = self.input_spec().to_dict()
        spec.pop("storage_options", None)
        return {
            "input": spec,
            "scoring": {k: v for k, v in self.scoring.to_dict().items()
                        if HASH_DEFAULTS.get(k, object()) != v},
            "stats": dataclasses.asdict(self.stats),
            "stats_format": [FORMAT_VERSION, BOOT_BUCKETS],
            "marker_format": run_folder_names.MARKER_FORMAT,
            "version": __version__,
            # the parts' columns: a run is not resumed with parts of both kinds (false: not in the hash)
            **({"output": {"keep_texts": True}} if self.output.keep_texts else {}),
        }

    def config_hash(self, length: int = 16) -> str:
        blob = json.dumps(self.hashed_settings(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


# --------------------------------------------------------------------------- loading
def _override_name(item: str) -> str:
    """An override as its messages name it: the key only, never the value (a credential in
    ``storage_options``, a URL's password)."""
    return f"--set {item.partition('=')[0].strip()}=..."


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"scoring.use_stemmer=true"`` -> ``(["scoring", "use_stemmer"], True)`` (value parsed as YAML)."""
    if not isinstance(item, str) or "=" not in item:
        raise ConfigError("an override without '=': expected dotted.key=value (the value is not shown)")
    key, _, raw = item.partition("=")
    parts = [p.strip() for p in key.strip().split(".")]
    if not all(parts):
        raise ConfigError(f"{_override_name(item)}: empty key")
    try:
        value = yaml12.load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise ConfigError(f"{_override_name(item)}: the value is not valid YAML ({problem}{where}; "
                          "the value is not shown)") from None
    return parts, value


def apply_overrides(d: dict, overrides: list[str] | None) -> dict:
    d = json.loads(json.dumps(d or {}))    # deep copy; YAML gave JSON-able data
    for item in overrides or []:
        parts, value = parse_override(item)
        node = d
        for i, p in enumerate(parts[:-1]):
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            elif not isinstance(nxt, dict):
                raise ConfigError(f"{_override_name(item)}: {'.'.join(parts[:i + 1])} is not a section")
            node = nxt
        node[parts[-1]] = value
    return d


# Keys holding local paths that, written in a config file, are relative to that file's folder.
PATH_KEYS = (("input", "paths"), ("input", "candidates"), ("input", "references"), ("output", "url"))


def _from_folder(folder: str, value: Any) -> Any:
    if isinstance(value, list):
        return [_from_folder(folder, v) for v in value]
    if not isinstance(value, str) or not value or "://" in value or os.path.isabs(value) or value.startswith("~"):
        return value
    return os.path.normpath(os.path.join(folder, value))


def resolve_paths(d: dict, folder: str) -> dict:
    """``d`` with the relative local paths of :data:`PATH_KEYS` joined to ``folder``; URLs,
    absolute and ``~`` paths are left as they are."""
    for section, key in PATH_KEYS:
        sub = d.get(section)
        if isinstance(sub, dict) and key in sub:
            sub[key] = _from_folder(folder, sub[key])
    return d


def load_config(path: str | os.PathLike | None, overrides: list[str] | None = None) -> RunConfig:
    """Read ``path`` (YAML, safe, 1.2 core schema; ``None``: overrides only), apply overrides, validate.

    Relative paths in the file (:data:`PATH_KEYS`) are resolved from the file's folder, so a
    config works from any current directory; paths in ``overrides`` (``--set``, ``--output``)
    stay relative to the current directory."""
    d: Any = {}
    if path is not None:
        with open(path, encoding="utf-8") as f:
            try:
                d = yaml12.load(f)
            except yaml.YAMLError as e:
                raise ConfigError(f"{path}: not valid YAML ({e})") from None
        if d is None:
            d = {}
        if not isinstance(d, dict):
            raise ConfigError(f"{path}: the top level must be a mapping, got {_type_name(d)}")
        d = resolve_paths(d, os.path.dirname(os.fspath(path)))
    return RunConfig.from_dict(apply_overrides(d, overrides))
