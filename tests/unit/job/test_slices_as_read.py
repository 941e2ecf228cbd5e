"""A task's slice of a unit is a one-chunk column with an offset (``table.slice``): the digests
and the cost estimate read it where it lies (no copy of its texts) and give what they give for
the same rows copied into columns of their own, and for several chunks."""
from __future__ import annotations

import pyarrow as pa
import pytest

from pipeline.job.digest import text_digest, text_digests
from pipeline.job.plan import estimate_costs

ROWS = [("a candidate", ["one reference"], "src"), ("bb b", ["y", "z z"], None), ("", [""], ""),
        ("ёж 🦔", ["日本語", "two", "three refs"], "x" * 70), ("last " * 30, ["r " * 40], None)]


def _table() -> pa.Table:
    return pa.table({"candidate": [c for c, _, _ in ROWS], "references": [r for _, r, _ in ROWS],
                     "source": pa.array([s for _, _, s in ROWS], pa.string())})


@pytest.mark.parametrize("lo", range(len(ROWS)))
def test_digests_of_a_one_chunk_slice(lo):
    t = _table().slice(lo)
    assert t.column("candidate").num_chunks == 1 and t.column("candidate").chunk(0).offset == lo
    got = text_digests(t.column("candidate"), t.column("references"), t.column("source"), signature="s",
                       with_source=True).tolist()
    assert got == [text_digest(c, r, s, signature="s", with_source=True) for c, r, s in ROWS[lo:]]


@pytest.mark.parametrize("lo", range(len(ROWS)))
def test_costs_of_a_slice_are_the_rows_own(lo):
    t = _table()
    own = pa.table({k: pa.array(t.column(k).to_pylist()[lo:], t.schema.field(k).type) for k in t.column_names})
    want = estimate_costs(own).tolist()
    assert estimate_costs(t.slice(lo)).tolist() == want
    assert estimate_costs(pa.concat_tables([t.slice(0, 2), t.slice(2)]).slice(lo)).tolist() == want
