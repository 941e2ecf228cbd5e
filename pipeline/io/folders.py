"""Layout ``folders``: ROUGE-1.5.5 / pyrouge folders of summaries, matched by file-name pattern.

```yaml
input:
  layout: folders
  candidates: runs/system_summaries/          # one folder per system (or a list of folders)
  references: data/model_summaries/
  system_filename_pattern: '(\\d+).txt'        # pyrouge's system_filename_pattern (default)
  model_filename_pattern: '#ID#.[A-Z].txt'     # pyrouge's model_filename_pattern (default)
  system_from: folder                         # optional: system = the candidate folder's name
```

As pyrouge does it (``Rouge155.__get_model_filenames_for_id`` / ``convert_and_evaluate``):

* every file of a candidates folder (directly in it, sorted by name) whose name **matches**
  ``system_filename_pattern`` (``re.match``: anchored at the start) is one candidate; its id is
  the pattern's first group (the whole match when the pattern has no group);
* its references are the files of the references folder whose **whole** names match
  ``model_filename_pattern`` with ``#ID#`` replaced by that id, sorted by name -- so
  ``42.A.txt``, ``42.B.txt``, ... in that order.  Unlike pyrouge, the id is escaped (``a+b``
  is not a pattern matching ``aab.A.txt``) and the match is ``re.fullmatch`` (a stray
  ``7.A.txt.bak`` is not a second reference of ``7``);
* each file is one summary with **one sentence per line**, read as UTF-8 and kept as it is
  (``\\r\\n`` becomes ``\\n``), which is exactly what ROUGE-1.5.5 reads from SPL files.  A file
  name ending in a compression extension (``.gz``, ``.bz2``, ``.xz``, ``.zst``) is decompressed,
  and a truncated one is an error naming it, as in every layout.

Files of the candidates folder that do not match are ignored (as pyrouge ignores them).  A
candidate without any reference file, an unreadable (non-UTF-8) file, and a second candidate
file with the same id become quarantine rows naming the file.  Units: one per candidate
folder, cut into slices of ``target_rows`` candidates.  ``row`` is the candidate's index in
its folder's sorted list of matching files.  (files2rouge users have one summary per line in
two files: that is layout ``lines``.)
"""
from __future__ import annotations

import re

from pipeline.io.paths import compression_of, list_folder
from pipeline.io.input_spec import WorkUnit
from pipeline.io.streams import open_input, reading


def _listing(folder: str, so: dict, what: str) -> tuple[str, list[tuple[str, str]]]:
    """``(folder url, [(file name, file url)])`` of the files directly in ``folder``, sorted."""
    return folder.rstrip("/"), [(name, url) for name, url, _ in list_folder(folder, so, f"input.{what}")]


def _id_of(match: re.Match) -> str:
    return match.group(1) if match.re.groups else match.group(0)


def plan_folders(spec, target_rows: int | None):
    """Work units of a ``folders`` input (see the module docstring)."""
    so = spec.storage_options
    sys_re = re.compile(spec.system_filename_pattern)
    _, models = _listing(_one(spec.references, "references"), so, "references")
    units = []
    for folder in spec.candidates:
        base, files = _listing(folder, so, "candidates")
        system = base.rsplit("/", 1)[-1] if spec.system_from == "folder" else ""
        examples = []   # (candidate url, [model urls], id)
        for name, url in files:
            m = sys_re.match(name)
            if m is None:
                continue
            id_ = _id_of(m)
            model_re = model_pattern(spec.model_filename_pattern, id_)
            refs = [u for n, u in models if model_re.fullmatch(n)]
            examples.append((url, refs, id_))
        if not examples:
            raise FileNotFoundError(f"input.candidates: no file of {folder!r} matches "
                                    f"system_filename_pattern {spec.system_filename_pattern!r}")
        step = target_rows or len(examples)
        for a in range(0, len(examples), step):
            chunk = examples[a:a + step]
            all_files: list[str] = []
            ranges = []
            for url, refs, _ in chunk:
                all_files.append(url)
                start = len(all_files)
                all_files.extend(refs)
                ranges.append((start - 1, start, len(all_files)))
            units.append(WorkUnit(index=len(units), layout="folders", file=base, format="text",
                                  row_start=a, row_stop=a + len(chunk), ref_files=tuple(all_files),
                                  ref_format="text", ref_ranges=tuple(ranges), system=system,
                                  n_rows=len(chunk)))
    return units


def _one(urls, what: str) -> str:
    if len(urls) != 1:
        raise ValueError(f"input.{what}: layout 'folders' takes one references folder, got {list(urls)!r}")
    return urls[0]


def model_pattern(pattern: str, id_: str) -> re.Pattern:
    """``model_filename_pattern`` for one id: the id matches only itself (escaped)."""
    return re.compile(pattern.replace("#ID#", re.escape(id_)))


def _read_text(url: str, so: dict) -> str:
    with reading(url), open_input(url, so, compression_of(url)) as f:
        raw = f.read()
    return raw.decode("utf-8").replace("\r\n", "\n")


def read_folders(spec, unit, out) -> None:
    """Fill ``out`` (a :class:`pipeline.io.canonical.Out`) with the unit's examples."""
    so = spec.storage_options
    sys_re = re.compile(spec.system_filename_pattern)
    for k, (ci, r0, r1) in enumerate(unit.ref_ranges):
        row = unit.row_start + k
        cand_url = unit.ref_files[ci]
        name = cand_url.rsplit("/", 1)[-1]
        m = sys_re.match(name)
        id_ = _id_of(m) if m else name
        where = cand_url
        refs_urls = unit.ref_files[r0:r1]
        if not refs_urls:
            out.quarantine(id_, unit.system, cand_url, row,
                           f"{where}: no references for id {id_!r} (no file of the references folder "
                           f"matches {spec.model_filename_pattern.replace('#ID#', id_)!r})")
            continue
        try:
            cand = _read_text(cand_url, so)
        except UnicodeDecodeError as e:
            out.quarantine(id_, unit.system, cand_url, row, f"{where}: invalid UTF-8 at byte {e.start}")
            continue
        refs = []
        bad = None
        for u in refs_urls:
            try:
                refs.append(_read_text(u, so))
            except UnicodeDecodeError as e:
                bad = f"references {u}: invalid UTF-8 at byte {e.start}"
                break
        if bad is not None:
            out.quarantine(id_, unit.system, cand_url, row, f"{where}: {bad}")
            continue
        out.add(id_, unit.system, cand, refs, None, row, cand_url, where)
