"""``rouge-pipeline eval``: files or stdin in, corpus scores out, in this process (no run folder).

    rouge-pipeline eval -r refs.txt -i hyps.txt             # one text per line, paired by line
    rouge-pipeline eval -r refs1.txt -r refs2.txt -i -      # two references per line, hypotheses on stdin
    rouge-pipeline eval -i pairs.jsonl -f json              # records with candidate and references fields
    rouge-pipeline eval -r refs.txt -i hyps.txt --per-example -f csv > per_example.csv

As in sacrebleu: ``-r`` (repeatable) references, ``-i`` the system output (``-``: stdin),
``-f table|json|csv``.  A ``.jsonl``/``.json`` (optionally ``.gz``) or ``.parquet`` file is
read by field name (``--candidate-field``, ``--references-field``, ``--id-field``,
``--system-field``: records of several systems are scored per system); any other
file has one text per line (``--newline-marker`` turns a marker such as ``<n>`` back into the
sentence breaks rougeLsum uses).  The table shows the exact means of P, R and F and the F
interval of rouge-score's bootstrap; JSON and CSV give the statistics rows a run's ``stats.json``
has (``pipeline.stats.rows``: its ``ci_mid`` is the bootstrap's mid) and the signature.

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
from pipeline.stats.keys import DEFAULT_SEED


def add_parser(sub) -> None:
    e = sub.add_parser("eval", help="score files or stdin in this process and print corpus P/R/F (no run folder)",
                       description=__doc__.split("\n\n")[1] if __doc__ else None,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("-r", "--refs", action="append", default=[], metavar="FILE",
                   help="reference file (repeat for several references per example)")
    e.add_argument("-i", "--input", default="-", metavar="FILE",
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
    e.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000; 0: no interval)")
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


def _open_text(path: str):
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="strict", newline="")
    import fsspec  # start-up: for the commands that read files

    return fsspec.open(path, "rt", encoding="utf-8", compression="infer", newline="").open()


def _read_lines(path: str, marker: str | None) -> list[str]:
    try:
        with _open_text(path) as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise EvalError(f"cannot read: {path}: {e}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    return [ln.replace(marker, "\n") for ln in lines] if marker else lines


def _read_records(path: str, fields: list[str]) -> dict[str, list]:
    if _kind(path) == "parquet":
        import pyarrow.parquet as pq  # start-up: Arrow, for a Parquet input only

        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as e:
            raise EvalError(f"cannot read: {path}: {e}") from None
        return {f: (table.column(f).to_pylist() if f in table.column_names else None) for f in fields}
    out: dict[str, list] = {f: [] for f in fields}
    try:
        with _open_text(path) as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    raise EvalError(f"not JSON: {path} line {n}: {e}") from None
                if not isinstance(rec, dict):
                    raise EvalError(f"not a JSON object: {path} line {n}: {type(rec).__name__}")
                for f in fields:
                    out[f].append(rec.get(f))
    except (OSError, UnicodeDecodeError) as e:
        raise EvalError(f"cannot read: {path}: {e}") from None
    return {f: (v if any(x is not None for x in v) else None) for f, v in out.items()}


def _texts(values, what: str, path: str) -> list[str]:
    for n, v in enumerate(values):
        if not isinstance(v, str):
            raise EvalError(f"{what} is not a text: {path} record {n + 1}: {type(v).__name__}")
    return list(values)


def _ids(ids: list | None) -> list[str] | None:
    """The printed ids: a record without one gets its row number, as every record does when none
    has an id (never the text "None")."""
    if ids is None:
        return None
    return [str(n) if i is None else str(i) for n, i in enumerate(ids)]


def read_inputs(args) -> tuple[list[str], list, list[str] | None, list[str] | None]:
    """(candidates, references, ids, systems) from the command's files (ids, systems: None when
    the input has no such field)."""
    ids = systems = None
    kind = _kind(args.input)
    if kind == "lines":
        cands = _read_lines(args.input, args.newline_marker)
    else:
        wanted = list(dict.fromkeys([args.candidate_field, args.id_field, args.system_field,
                                     *([] if args.refs else [args.references_field])]))
        recs = _read_records(args.input, wanted)
        if recs[args.candidate_field] is None:
            raise EvalError(f"no field {args.candidate_field!r} (--candidate-field): {args.input}: "
                            "give the field holding the system output" + _field_hints(args))
        cands = _texts(recs[args.candidate_field], "the candidate", args.input)
        ids = recs[args.id_field]
        systems = _systems(recs[args.system_field], args.input)
        if not args.refs:
            refs = recs[args.references_field]
            if refs is None:
                raise EvalError(f"no field {args.references_field!r} (--references-field) and no -r file: "
                                f"{args.input}: give the references" + _field_hints(args))
            for n, r in enumerate(refs):
                if isinstance(r, str):
                    continue
                if not isinstance(r, list) or not r or not all(isinstance(x, str) for x in r):
                    raise EvalError(f"references must be a text or a non-empty list of texts: {args.input} "
                                    f"record {n + 1}: {r!r:.60}")
            return cands, refs, _ids(ids), systems
    if not args.refs:
        raise EvalError(f"no references: {args.input}: pass -r FILE (or a JSONL/Parquet input with references)")
    columns = []
    for path in args.refs:
        if _kind(path) == "lines":
            col = _read_lines(path, args.newline_marker)
        else:
            recs = _read_records(path, [args.references_field])
            if recs[args.references_field] is None:
                raise EvalError(f"no field {args.references_field!r} (--references-field): {path}")
            col = _texts(recs[args.references_field], "the reference", path)
        if len(col) != len(cands):
            raise EvalError(f"{len(col)} references for {len(cands)} candidates: {path}: "
                            f"the files must have one text per example ({args.input})")
        columns.append(col)
    refs = columns[0] if len(columns) == 1 else [list(x) for x in zip(*columns)]
    return cands, refs, _ids(ids), systems


# --------------------------------------------------------------------------- systems

def _systems(values: list | None, path: str) -> list[str] | None:
    """Each record's system (a record without one: ``""``, as in a run), or None when no record
    has the field."""
    if values is None:
        return None
    for n, v in enumerate(values):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (str, int))):
            raise EvalError(f"the system is not a text: {path} record {n + 1}: {type(v).__name__}")
    return ["" if v is None else str(v) for v in values]


def _field_hints(args) -> str:
    """``; did you mean --candidate-field X --references-field Y ...?``: every option a field of the
    input's first records probably answers (a system field too), or ``""``."""
    from pipeline.io.readers import first_fields, likely_field  # start-up: Arrow and fsspec, for a records input

    fields = first_fields((args.input,), "auto", {})
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


def _likely_system_field(args) -> str | None:
    """A field of the input's first records that looks like a system name (``model``, ...)."""
    from pipeline.io.readers import first_fields, likely_field  # start-up: Arrow and fsspec, for a records input

    taken = {args.candidate_field, args.references_field, args.id_field, args.system_field}
    return likely_field(args.system_field, "system", [f for f in first_fields((args.input,), "auto", {})
                                                      if f not in taken])


def check_systems(args, ids, systems) -> None:
    """A records input is never pooled over systems without a word: each (system, id) once, and
    a field that looks like a system name (with several values) is used by ``--system-field``
    (or turned down by ``--system-field ''``).  Raises :class:`EvalError` otherwise."""
    if _kind(args.input) == "lines":
        return
    guess = None
    if systems is None and args.system_field:
        guess = _likely_system_field(args)
        if guess is not None:
            values = sorted(set(map(str, _read_records(args.input, [guess])[guess] or [])))
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
        for t in res.rouge_types:
            m = res.mean[t]
            a = res.aggregate.get(t)
            ci = f"[{_fmt(a.low.fmeasure)}, {_fmt(a.high.fmeasure)}]" if a else "-"
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
            rid = ids[i] if ids is not None else str(i)
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
    head = {k: v for k, v in results[0].to_dict().items() if k not in ("system", "n", "rows")}
    return {"n": sum(r.n for r in results), "systems": {s: r.n for s, r in result.items()}, **head,
            "rows": [row for r in results for row in r.rows()]}


def run(args) -> int:
    """The ``eval`` command; returns its exit status."""
    from pipeline.api import compute  # start-up: pipeline.api loads NumPy

    try:
        if not 0 <= args.confidence <= 1 or args.n_boot < 0:
            raise EvalError("bad option: --confidence must be in [0, 1] and --n-boot >= 0")
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
        if args.per_example:
            scorer = RougeScorer(types, use_stemmer=args.use_stemmer, **options)
            _per_example(scorer, cands, refs, ids, args.format, sys.stdout, systems=systems)
            return EXIT_OK
        check_systems(args, ids, systems)
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
