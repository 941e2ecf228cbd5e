"""The statistics' example key, its hash and the default seed: an example's bootstrap draws are
a pure function of ``(seed, key)`` (:mod:`pipeline.stats.poisson`).

An example's key is ``f"{system}\\x1f{id}"`` (:func:`example_key`).  A system name may not hold
the separator (the readers quarantine such rows, the DataFrame API refuses them), so the first
separator of a key ends its system and two different (system, id) pairs never share a key; an
id may hold it.  No NumPy or Arrow at import: the CLI reads :data:`DEFAULT_SEED`.
"""
from __future__ import annotations

import re

KEY_SEPARATOR = "\x1f"
# stats.seed of a run configuration, and the seed of every command and function that takes one
DEFAULT_SEED = 12345
# the most bootstrap replicates any command or function takes (stats.n_boot, eval --n-boot,
# compute's n_boot): a run's finalisation holds an n_boot x 1024 float64 block per system
MAX_N_BOOT = 20_000


def example_key(system: str, id_: str) -> str:
    """The key of one example."""
    return f"{system}{KEY_SEPARATOR}{id_}"


def document_keys(ids: list[str], system: str, doc_key: str | None, error: type[Exception] = ValueError,
                  shown: str | None = None) -> list[str]:
    """The document of every id of ``system`` (``--doc-key`` of ``compare`` and ``correlate``):
    ``doc_key`` is a regular expression whose first group is the document, ``{system}`` in it
    standing for the system's name (escaped); None: each id is its own document.  A bad pattern,
    or an id it does not match, raises ``error`` (the system named as ``shown``)."""
    if not doc_key:
        return list(ids)
    try:
        rx = re.compile(doc_key.replace("{system}", re.escape(system)))
    except re.error as e:
        raise error(f"--doc-key {doc_key!r}: not a regular expression ({e})") from None
    if rx.groups < 1:
        raise error(f"--doc-key {doc_key!r}: needs a group, the document, e.g. '(.*):{{system}}$'")
    out = []
    for i in ids:
        m = rx.search(i)
        if m is None:
            raise error(f"--doc-key {doc_key!r} does not match id {i!r} of system {shown or system!r}")
        out.append(m.group(1))
    return out


def example_keys(systems, ids):
    """:func:`example_key` of every row of two Arrow columns (chunked or not; ids cast to
    strings), as one Arrow string array."""
    import pyarrow as pa  # Arrow only when joining columns: the module stays light
    import pyarrow.compute as pc

    def one(col):
        return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col

    return pc.binary_join_element_wise(one(systems), one(ids).cast(pa.string()), KEY_SEPARATOR)


def example_key_hashes(keys):
    """The uint64 hash (BLAKE2b-64 of the UTF-8 bytes) of every key of an Arrow string array (from
    its buffers, no str per key), as :func:`pipeline.stats.poisson.key_hashes` hashes a list."""
    from pipeline.columns import utf8_buffers  # NumPy and numba only when hashing: the module stays light
    from pipeline.stats import poisson  # (the same)

    return poisson.key_hashes_utf8(*utf8_buffers(keys))
