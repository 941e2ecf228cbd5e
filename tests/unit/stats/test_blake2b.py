"""The compiled BLAKE2b-64 of many spans (several spans at once, one a vector lane) against hashlib."""
import hashlib

import numpy as np
import pytest

from pipeline.stats import blake2b


def _want(buf: np.ndarray, starts, ends) -> list[int]:
    raw = buf.tobytes()
    return [int.from_bytes(hashlib.blake2b(raw[a:b], digest_size=8).digest(), "little") for a, b in zip(starts, ends)]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 33])
def test_fewer_or_more_spans_than_lanes(n):
    rng = np.random.default_rng(n)
    buf = rng.integers(0, 256, 3000, dtype=np.uint8)
    starts = rng.integers(0, 1500, n)
    ends = starts + rng.integers(0, 1400, n)
    assert blake2b.blake2b64_spans(buf, starts, ends).tolist() == _want(buf, starts, ends)


def test_lanes_of_very_different_lengths_take_spans_as_they_finish():
    """One long span beside many short ones: its lane keeps compressing while the others each
    hash many spans; spans overlap, repeat and leave gaps; lengths on every block boundary."""
    rng = np.random.default_rng(7)
    buf = rng.integers(0, 256, 40_000, dtype=np.uint8)
    lengths = [30_000] + [int(x) for x in rng.integers(0, 300, 500)] + [0, 127, 128, 129, 255, 256, 257, 0]
    starts = rng.integers(0, 40_000 - 30_000, len(lengths))
    ends = starts + np.array(lengths)
    assert blake2b.blake2b64_spans(buf, starts, ends).tolist() == _want(buf, starts, ends)



@pytest.mark.parametrize("starts, ends", [([-1], [3]), ([5], [4]), ([0], [11])])
def test_a_span_outside_the_buffer_is_refused(starts, ends):
    with pytest.raises(ValueError, match="outside the buffer"):
        blake2b.blake2b64_spans(np.zeros(10, np.uint8), np.array(starts), np.array(ends))
