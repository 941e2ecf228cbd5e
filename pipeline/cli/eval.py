"""``rouge-pipeline eval``: files or stdin in, corpus scores out, in this process (no run folder).

    rouge-pipeline eval -r refs.txt -i hyps.txt             # one text per line, paired by line
    rouge-pipeline eval -r refs1.txt -r refs2.txt -i -      # two references per line, hypotheses on stdin
    rouge-pipeline eval -i pairs.jsonl -f json              # records with candidate and references fields
    rouge-pipeline eval -r refs.txt -i hyps.txt --per-example -f csv > per_example.csv

As in sacrebleu: ``-r`` (repeatable) references, ``-i`` the system output (``-``: stdin),
``-f table|json|csv``.  Files are opened and records checked as ``score`` opens and checks them
(:mod:`pipeline.io.streams`, :mod:`pipeline.io.canonical`; a bad record ends the command with the
reason the run would quarantine it for).  A ``.jsonl``/``.json`` (optionally ``.gz``) or ``.parquet`` file is
read by field name (``--candidate-field``, ``--references-field``, ``--id-field``,
``--system-field``: records of several systems are scored per system); any other
file has one text per line (``--newline-marker`` turns a marker such as ``<n>`` back into the
sentence breaks rougeLsum uses).  The table shows the exact means of P, R and F and the F
interval of rouge-score's bootstrap; JSON and CSV add its mid and the signature.

Start-up: NumPy, Arrow and fsspec are imported inside the functions that use them, so importing
this module (``rouge-pipeline`` does, for every command) loads none of them.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys

from pipeline import RougeScorer
from pipeline.errors import EXIT_CONFIG, EXIT_NO_ROWS, EXIT_OK, EvalError
from pipeline.scoring.types import DEFAULT_TYPES, STATS
from pipeline.stats.keys import DEFAULT_SEED, MAX_N_BOOT


class _Once(argparse.Action):
    """An option given at most once (a second ``-i`` would silently replace the first)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, f"_{self.dest}_given", None) is not None:  # run() says it, in one line
            namespace.twice = f"{option_string} given twice ({getattr(namespace, self.dest)}, {values}): " \
                              "one system output per command"
        setattr(namespace, f"_{self.dest}_given", values)
        setattr(namespace, self.dest, values)


def add_parser(sub) -> None:
    e = sub.add_parser("eval", help="score files or stdin in this process and print corpus P/R/F (no run folder)",
                       description=__doc__.split("\n\n")[1] if __doc__ else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("-r", "--refs", action="append", default=[], metavar="FILE",
                   help="reference file (repeat for several references per example)")
    e.add_argument("-i", "--input", default="-", metavar="FILE", action=_Once,
                   help="system output: a line file, JSONL or Parquet ('-': stdin, the default)")
    e.add_argument("-f", "--format", choices=("table", "json", "csv"), default="table",
                   help="output format (--per-example: json means JSON lines; default table, or json lines)")
    e.add_argument("--per-example", action="store_true", help="print one row per example instead of the corpus")
    e.add_argument("-t", "--rouge-types", default=",".join(DEFAULT_TYPES), metavar="TYPES",
                   help="comma-separated rouge types (default %(default)s; also rougeW-1.2, rougeS4, rougeSU4)")
    e.add_argument("-s", "--use-stemmer", action="store_true", help="Porter stemming (rouge-score's use_stemmer)")
    e.add_argument("--profile", default="rouge-score-0.1.2",
                   help="rouge-score-0.1.2 (default) | unicode (any script) | rouge155 (ROUGE-1.5.5's numbers)")
    e.add_argument("--language", default="en", help="ISO 639 code for the unicode profile (default en)")
    e.add_argument("--multi-ref", default=None,
                   help="several references: max_f (default) | pooled/A | best_recall/B | mean")
    e.add_argument("--alpha", type=float, default=0.5, help="F = PR/((1-alpha)P + alpha R) (default 0.5)")
    e.add_argument("--sentence-splitter", default=None, help="rougeLsum sentences: newline (default) | punkt | sentencex")
    e.add_argument("--newline-marker", metavar="STR", help="in line files, STR stands for a newline (e.g. '<n>')")
    e.add_argument("--confidence", type=float, default=0.95, help="confidence level of the interval (default 0.95)")
    e.add_argument("--n-boot", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, at most {MAX_N_BOOT:,}; 0: no interval)")
    e.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})")
    e.add_argument("--candidate-field", default="candidate", help="JSONL/Parquet: candidate field (default candidate)")
    e.add_argument("--references-field", default="references",
                   help="JSONL/Parquet: references field, a text or a list of texts (default references)")
    e.add_argument("--id-field", default="id", help="JSONL/Parquet: id field, printed with --per-example (default id; a record without one: its row number)")
    e.add_argument("--system-field", default="system",
                   help="JSONL/Parquet: system field; records of several systems are scored per system (default system)")


# --------------------------------------------------------------------------- reading

def _kind(path: str) -> str:
    from pipeline.io.paths import infer_format  # start-up: loads fsspec, for the commands that read files

    fmt = infer_format(path, default="text")
    return "lines" if fmt == "text" else fmt


def _read_bytes(path: str) -> bytes:
    """The file's bytes, decompressed by extension or content as the run's readers do (the same
    errors: a missing decoder, a truncated file, each naming the file)."""
    # start-up: fsspec and Arrow, for the commands that read files
    from pipeline.io.paths import compression_of
    from pipeline.io.streams import open_input, reading, sniff_compression

    if path == "-":
        if sys.stdin is None or sys.stdin.closed:
            raise EvalError("no input: stdin is closed: pass -i FILE")
        data = sys.stdin.buffer.read()
        comp = sniff_compression(data[:10])
        if comp is None:
            return data
        import fsspec.compression  # start-up: as above

        path = "<stdin>"
        stream = fsspec.compression.compr[comp](io.BytesIO(data), mode="rb")
        with reading(path):
            return stream.read()
    try:
        with reading(path), open_input(path, {}, compression_of(path)) as f:
            return f.read()
    except OSError as e:
        raise EvalError(f"cannot read: {path}: {e}") from None


def _decode(data: bytes, path: str, row: int = 0) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        where = "<stdin>" if path == "-" else path
        line = row + 1 + data.count(b"\n", 0, e.start)
        raise EvalError(f"{where} line {line}: invalid UTF-8 at byte {e.start}") from None


def _read_lines(path: str, marker: str | None) -> list[str]:
    lines = _decode(_read_bytes(path), path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return [ln.replace(marker, "\n") for ln in lines] if marker else lines


def _parquet_records(path: str, fields: list[str], pick=None) -> tuple[list[str], list[tuple[int, dict]]]:
    """The file's column names and its records' ``fields`` (plus the column ``pick(names)``
    names, if any: the file is opened once)."""
    import pyarrow.parquet as pq  # start-up: Arrow, for a Parquet input only

    from pipeline.io.streams import open_input, reading  # start-up: fsspec, for the commands that read files

    with reading(path, parquet=True), open_input(path, {}) as f:
        pf = pq.ParquetFile(f)
        names = list(pf.schema_arrow.names)
        extra = pick(names) if pick else None
        table = pf.read(columns=[c for c in dict.fromkeys([*fields, *([extra] if extra else [])]) if c in names])
    cols = {c: table.column(c).to_pylist() for c in table.column_names}
    return names, [(n, {c: v[n] for c, v in cols.items()}) for n in range(table.num_rows)]


# the size from which a JSONL input is tried on the records layout's Arrow path
_FAST_MIN_BYTES = 1 << 20


def _fast_jsonl(data: bytes, fields: dict[str, str]) -> dict[str, list] | None:
    """A large, clean JSONL input with ids through the records layout's own Arrow path
    (``records._clean_lines``, ``_fast_columns``: the same checks, column by column); None for
    anything else, which :func:`_jsonl_records` reads line by line."""
    if len(data) < _FAST_MIN_BYTES or not fields.get("system"):
        return None
    # numba (the layout's byte check): for a large input, which loads it to score anyway
    from pipeline.io import records
    from pipeline.io.input_spec import InputSpec

    n_lines = records._clean_lines(data)
    if n_lines is None:
        return None
    spec = InputSpec.from_config({"layout": "records", "paths": "-", "columns": dict(fields)})
    columns = records._fast_columns(spec, data, n_lines)
    if columns is None:
        return None
    ids, systems, cands, refs, _ = columns
    return {"candidate": cands.to_pylist(), "id": ids.to_pylist(), "row": list(range(n_lines)),
            "references": refs.to_pylist(), "system": systems.to_pylist()}


def _jsonl_records(path: str, data: bytes, row_stop: int | None = None) -> list[tuple[int, dict]]:
    # start-up: Arrow and fsspec, for the commands that read files
    from pipeline.io.canonical import json_lines, location
    from pipeline.io.streams import lines_of

    out = []
    for row, rec, err in json_lines(lines_of(data, 0, row_stop), path, True, EvalError):
        if err is not None:
            raise EvalError(f"{location(path, row, 'jsonl')}: {err}")
        out.append((row, rec))
    return out

def _first_names(recs) -> list[str]:
    """The fields of the first 5 records (as :func:`pipeline.io.readers.first_fields` sees a file)."""
    names: dict[str, None] = {}
    for _, rec in [r for r in recs if isinstance(r[1], dict)][:5]:
        names.update(dict.fromkeys(map(str, rec)))
    return list(names)


def _system_guess(fields: dict[str, str], names: list[str]) -> str | None:
    """A field among ``names`` that looks like a system name (``model``, ...), the mapping's own left out."""
    from pipeline.io.readers import likely_field  # start-up: Arrow and fsspec, for a records input

    if not fields.get("system"):
        return None
    return likely_field(fields["system"], "system", [f for f in names if f not in set(fields.values())])


def _read_records(path: str, fields: dict[str, str], with_refs: bool, what: str = "candidate", hints=None):
    """``{key: [values]}`` for ``candidate``, ``id`` (None where a record has none),
    ``references`` (with ``with_refs``) and the row of each record, checked field by field
    as the run's readers check them (the same reasons; here each ends the command).  ``what``
    names the text field read as ``candidate`` (``reference`` in a ``-r`` record file).  Also
    ``names``, the first records' fields, and ``guessed``: ``(field, its values)`` for a field that
    looks like a system name when no record has ``fields["system"]`` (else None) -- from the
    records read here: the input is read once (stdin or a pipe cannot be read twice)."""
    fmt = _kind(path)
    if fmt == "parquet":
        names, recs = _parquet_records(path, [f for f in fields.values() if f], lambda n: _system_guess(fields, n))
    else:
        data = _read_bytes(path)
        fast = _fast_jsonl(data, fields) if with_refs else None
        if fast is not None:
            if any(fast["system"]):
                return {**fast, "names": [], "guessed": None}
            names = _first_names(_jsonl_records(path, data, 200))
            guess = _system_guess(fields, names)   # the records parsed again (from memory) only then
            return {**fast, **_guessed(fields, _jsonl_records(path, data) if guess else [], names)}
        recs = _jsonl_records(path, data)
        names = _first_names(recs)
    out = _checked_records(path, fmt, recs, fields, with_refs, what, lambda: hints(names) if hints else "")
    return {**out, **(_guessed(fields, recs, names) if not any(out["system"]) else {"names": names, "guessed": None})}


def _guessed(fields: dict[str, str], recs, names: list[str] | None = None) -> dict:
    names = _first_names(recs) if names is None else names
    guess = _system_guess(fields, names)
    values = sorted({str(r[guess]) for _, r in recs if isinstance(r, dict) and r.get(guess) is not None}) if guess else []
    return {"names": names, "guessed": (guess, values) if guess else None}


def _checked_records(path, fmt, recs, fields, with_refs, what, hints) -> dict[str, list]:
    # start-up: Arrow, for the commands that read files
    from pipeline.io.canonical import BadRecord, get_id, get_refs, get_str, get_system, location

    wanted = [("candidate", "--candidate-field" if what == "candidate" else "--references-field")]
    for key, option in wanted + ([("references", "--references-field")] if with_refs else []):
        if recs and not any(fields[key] in r for _, r in recs):
            raise EvalError((f"no field {fields[key]!r} ({option}): {path}: give the field holding the {what}"
                             if key == "candidate" else
                             f"no field {fields[key]!r} ({option}) and no -r file: {path}: give the references")
                            + hints())
    out: dict[str, list] = {"candidate": [], "id": [], "row": [], "references": [], "system": []}
    for row, rec in recs:
        try:
            if with_refs:
                out["references"].append(get_refs(rec, fields["references"]))
            out["candidate"].append(get_str(rec, fields["candidate"], what, True))
            # an id field missing or null: the record's line names it (``<stem>:<line>``)
            out["id"].append(None if rec.get(fields["id"]) is None else get_id(rec, fields["id"]))
            # (system, id) is an example's key; --system-field '': pooled on purpose
            out["system"].append(get_system(rec, fields["system"]) if fields.get("system") else "")
        except BadRecord as b:
            raise EvalError(f"{location(path, row, fmt)}: {b.reason}") from None
        out["row"].append(row)
    return out


def _ids(path: str, rows: list[int], given: list | None = None) -> list[str]:
    """The examples' ids: ``given[k]`` where there is one, else ``<file stem>:<line>`` (1-based),
    as the ``lines`` layout names its examples."""
    from pipeline.io.paths import file_stem  # start-up: fsspec, for the commands that read files

    stem = "stdin" if path == "-" else file_stem(path)
    given = given or [None] * len(rows)
    return [f"{stem}:{r + 1}" if i is None else i for r, i in zip(rows, given)]


def read_inputs(args) -> tuple[list[str], list, list[str], list[str] | None]:
    """(candidates, references, ids, systems) from the command's files (systems: None when no
    record names one); ``args.guessed``: a field that looks like a system name and its values
    (:func:`_read_records`), for :func:`check_systems`."""
    systems = None
    args.guessed = None
    if _kind(args.input) == "lines":
        cands = _read_lines(args.input, args.newline_marker)
        ids = _ids(args.refs[0] if args.refs else args.input, list(range(len(cands))))
    else:
        fields = {"candidate": args.candidate_field, "id": args.id_field, "references": args.references_field,
                  "system": args.system_field}
        recs = _read_records(args.input, fields, with_refs=not args.refs,
                             hints=lambda names: _field_hints(args, names))
        args.guessed = recs["guessed"]
        if not recs["row"]:
            return [], [], [], None
        cands = recs["candidate"]
        ids = _ids(args.input, recs["row"], recs["id"])
        systems = recs["system"] if any(recs["system"]) else None
        if not args.refs:
            return cands, recs["references"], ids, systems
    if not args.refs:
        raise EvalError(f"no references: {args.input}: pass -r FILE (or a JSONL/Parquet input with references)")
    columns = []
    for path in args.refs:
        if _kind(path) == "lines":
            col = _read_lines(path, args.newline_marker)
        else:
            fields = {"candidate": args.references_field, "id": args.id_field, "references": args.references_field,
                      "system": ""}
            col = _read_records(path, fields, with_refs=False, what="reference")["candidate"]
        if len(col) != len(cands):
            raise EvalError(f"{len(col)} references for {len(cands)} candidates: {path}: "
                            f"the files must have one text per example ({args.input})")
        columns.append(col)
    refs = columns[0] if len(columns) == 1 else [list(x) for x in zip(*columns)]
    return cands, refs, ids, systems


# --------------------------------------------------------------------------- systems

def _field_hints(args, fields: list[str]) -> str:
    """``; did you mean --candidate-field X --references-field Y ...?``: every option a field of the
    input's first records (``fields``) probably answers (a system field too), or ``""``."""
    from pipeline.io.readers import likely_field  # start-up: Arrow and fsspec, for a records input

    options = [("candidate", "--candidate-field"), ("id", "--id-field"), ("system", "--system-field")]
    if not args.refs:
        options.insert(1, ("references", "--references-field"))
    taken = {getattr(args, f"{key}_field") for key, _ in options} & set(fields)
    hints = []
    for key, option in options:
        col = getattr(args, f"{key}_field")
        if col in fields or (key == "system" and not col):
            continue
        guess = likely_field(col, key, [f for f in fields if f not in taken])
        if guess:
            hints.append(f"{option} {guess}")
            taken.add(guess)
    return f"; did you mean {' '.join(hints)}?" if hints else ""


def check_systems(args, ids, systems) -> None:
    """A records input is never pooled over systems without a word: each (system, id) once, and
    a field that looks like a system name (with several values) is used by ``--system-field``
    (or turned down by ``--system-field ''``).  Raises :class:`EvalError` otherwise."""
    if _kind(args.input) == "lines":
        return
    guess = None
    if systems is None and args.system_field and getattr(args, "guessed", None):
        guess, values = args.guessed
        if guess is not None:
            if len(values) < 2:
                guess = None   # one value: not several systems
            else:
                raise EvalError(f"the records hold {len(values)} systems in field {guess!r} "
                                f"({', '.join(values[:3])}{', ...' if len(values) > 3 else ''}): {args.input}: "
                                f"score each with --system-field {guess} (--system-field '' pools them)")
    if ids is None:
        return
    first: dict = {}
    repeats = []
    for n, key in enumerate(zip(systems or [""] * len(ids), ids)):
        if first.setdefault(key, n) != n:
            repeats.append((first[key], n, key))
    if repeats:
        a, b, (system, rid) = repeats[0]
        what = (f"{len(repeats)} repeated (system, id) pair(s) (id {rid!r} of system {system!r}" if systems
                else f"{len(repeats)} repeated id(s) (id {rid!r}")
        hint = ("each example once per system" if systems else
                f"several systems? score each with --system-field {guess or 'FIELD'}")
        raise EvalError(f"{what} on records {a + 1} and {b + 1}): {args.input}: {hint} "
                        "(--id-field '' numbers the records instead)")


# --------------------------------------------------------------------------- output

def _fmt(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def format_table(result) -> str:
    """The table of a :class:`RougeResult`, or of ``{system: RougeResult}`` (a system column first,
    one row per system and type, as a run's table)."""
    results = result if isinstance(result, dict) else {None: result}
    result = next(iter(results.values()))
    pct = f"{result.confidence * 100:g}%"
    head = ["type", "n", "P", "R", "F", f"F {pct} CI"]
    lines = []
    for system, res in results.items():
        f_ci = res.f_interval()  # F alone: the table shows no P or R interval
        for t in res.rouge_types:
            m = res.mean[t]
            a = f_ci.get(t)
            ci = f"[{_fmt(a[0])}, {_fmt(a[2])}]" if a else "-"
            lines.append([t, str(res.n), _fmt(m.precision), _fmt(m.recall), _fmt(m.fmeasure), ci])
            if system is not None:
                lines[-1].insert(0, system or "(no system)")
    if None not in results:
        head.insert(0, "system")
    widths = [max(len(head[i]), *(len(ln[i]) for ln in lines)) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(ln, widths)) for ln in lines]
    out.append(f"signature: {result.signature}")
    return "\n".join(out)


def _per_example(scorer, cands, refs, ids, fmt: str, out, chunk: int = 10_000, systems=None) -> None:
    """Rows written as each chunk is scored (JSON lines or CSV; with ``systems``, each row's)."""
    names = [f"{t}_{s}" for t in scorer.rouge_types for s in STATS]
    writer = None
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["index", "id", *(["system"] if systems else []), *names])
    for lo in range(0, len(cands), chunk):
        res = scorer.score_arrays(refs[lo:lo + chunk], cands[lo:lo + chunk])
        flat = res.scores.reshape(res.scores.shape[0], -1).tolist()
        for k, row in enumerate(flat):
            i = lo + k
            rid = ids[i]
            system = [systems[i]] if systems else []
            if writer is not None:
                writer.writerow([i, rid, *system, *(repr(v) for v in row)])
            else:
                out.write(json.dumps({"index": i, "id": rid, **dict(zip(["system"], system)), **dict(zip(names, row))})
                          + "\n")
        out.flush()


def _json(result) -> dict:
    """A result's JSON; per system: the systems, and every system's rows (each with its ``system``)."""
    if not isinstance(result, dict):
        return result.to_dict()
    results = list(result.values())
    head = {k: v for k, v in results[0].to_dict(rows=False).items() if k not in ("system", "n")}
    return {"n": sum(r.n for r in results), "systems": {s: r.n for s, r in result.items()}, **head,
            "rows": [row for r in results for row in r.rows()]}


def run(args) -> int:
    """The ``eval`` command; returns its exit status."""
    from pipeline.api import compute  # start-up: pipeline.api loads NumPy

    try:
        if getattr(args, "twice", None):
            raise EvalError(args.twice)
        if not 0 <= args.confidence <= 1 or not 0 <= args.n_boot <= MAX_N_BOOT:
            raise EvalError(f"bad option: --confidence must be in [0, 1] and --n-boot from 0 to {MAX_N_BOOT:,}")
        types = [t.strip() for t in args.rouge_types.split(",") if t.strip()]
        twice = sorted({t for t in types if types.count(t) > 1})
        if twice or not types:
            raise EvalError(f"bad option: -t {args.rouge_types!r}: " + (f"names {', '.join(twice)} twice" if twice
                                                                        else "give at least one rouge type"))
        cands, refs, ids, systems = read_inputs(args)
        options = dict(profile=args.profile, language=args.language, multi_ref=args.multi_ref, alpha=args.alpha,
                       sentence_splitter=args.sentence_splitter)
        if not cands:
            print(f"rouge-pipeline: eval: no example: {args.input}: the input is empty", file=sys.stderr)
            return EXIT_NO_ROWS
        check_systems(args, ids, systems)
        if args.per_example:
            scorer = RougeScorer(types, use_stemmer=args.use_stemmer, **options)
            _per_example(scorer, cands, refs, ids, args.format, sys.stdout, systems=systems)
            return EXIT_OK
        result = compute(cands, refs, rouge_types=types, use_stemmer=args.use_stemmer, confidence=args.confidence,
                         n_boot=args.n_boot, seed=args.seed, return_result=True, systems=systems, **options)
    except (EvalError, ValueError) as e:
        print(f"rouge-pipeline: eval: {e}", file=sys.stderr)
        return EXIT_CONFIG
    if args.format == "json":
        print(json.dumps(_json(result), indent=2))
    elif args.format == "csv":
        results = list(result.values()) if isinstance(result, dict) else [result]
        w = csv.writer(sys.stdout, lineterminator="\n")
        rows, sig = [r for res in results for r in res.rows()], results[0].signature   # the rows' one shape
        w.writerow([*rows[0], "signature"] if rows else ["signature"])
        for r in rows:
            w.writerow([*("" if v is None else repr(v) if isinstance(v, float) else v for v in r.values()), sig])
    else:
        print(format_table(result))
    return EXIT_OK
