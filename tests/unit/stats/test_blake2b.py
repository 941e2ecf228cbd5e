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


@pytest.mark.parametrize("buf, starts, ends", [
    (np.zeros(10, np.uint8), np.arange(9), np.array([9])),      # one end for nine starts: the kernel read past it
    (np.zeros(10, np.uint8), np.array([0, 1]), np.array([5, 6, 7])),
    (np.zeros(10, np.uint8), np.array([[0, 1]]), np.array([[5, 6]])),
    (np.arange(4, dtype=np.uint64), np.array([0]), np.array([4])),   # 32 bytes, not 4: not silently cast
    (np.zeros((4, 4), np.uint8), np.array([0]), np.array([4])),
], ids=["one-end-broadcast", "more-ends", "2-d-spans", "uint64-buffer", "2-d-buffer"])
def test_spans_and_buffers_of_other_shapes_are_refused(buf, starts, ends):
    with pytest.raises(ValueError, match="blake2b64_spans: "):
        blake2b.blake2b64_spans(buf, starts, ends)


@pytest.mark.parametrize("starts, ends", [
    (np.array([0.5]), np.array([4])),          # was read as 0: a span that starts a byte early
    (np.array([0]), np.array([3.9])),          # was read as 3
    (np.array([1.0]), np.array([4.0])),        # whole, but floats: a caller's offsets gone wrong
    (np.array([False]), np.array([True])),
    ([0, 1], [2.5, 3]),
], ids=["float-start", "float-end", "whole-floats", "bools", "lists"])
def test_spans_that_are_not_integers_are_refused_not_truncated(starts, ends):
    with pytest.raises(TypeError, match=r"^blake2b64_spans: integer starts and ends, not (float64|bool)$"):
        blake2b.blake2b64_spans(np.arange(10, dtype=np.uint8), starts, ends)


def test_integer_spans_of_any_width_and_empty_lists_are_taken():
    buf = np.arange(10, dtype=np.uint8)
    want = _want(buf, [1], [7])
    for dtype in (np.int8, np.uint16, np.int32, np.uint64):
        assert blake2b.blake2b64_spans(buf, np.array([1], dtype), np.array([7], dtype)).tolist() == want
    assert blake2b.blake2b64_spans(buf, [1], [7]).tolist() == want
    assert blake2b.blake2b64_spans(buf, [], []).tolist() == []


@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
def test_every_lane_width_gives_hashlib_s_digests(lanes):
    """The width is the machine's (8 with AVX-512, 1 for the generic CPU, else 4): the kernel built
    at each width here, from this module's source (not cached), as another machine would build it."""
    import inspect
    import types

    src = inspect.getsource(blake2b)
    line = next(ln for ln in src.splitlines() if ln.strip().startswith("LANES = "))
    src = src.replace(line, line.split("LANES")[0] + f"LANES = {lanes}").replace("cache=True", "cache=False")
    mod = types.ModuleType(f"blake2b_{lanes}_lanes")
    exec(compile(src, mod.__name__, "exec"), mod.__dict__)
    assert mod.LANES == lanes
    rng = np.random.default_rng(lanes)
    buf = rng.integers(0, 256, 5000, dtype=np.uint8)
    lengths = [int(x) for x in rng.integers(0, 400, 200)] + [0, 127, 128, 129, 256, 3000]
    starts = rng.integers(0, 5000 - 3000, len(lengths))
    ends = starts + np.array(lengths)
    assert mod.blake2b64_spans(buf, starts, ends).tolist() == _want(buf, starts, ends)


@pytest.mark.parametrize("env, lanes", [({"NUMBA_CPU_NAME": "generic"}, "1"), ({"NUMBA_ENABLE_AVX": "0"}, "4"),
                                         ({"NUMBA_CPU_FEATURES": "-avx512f"}, "4")],
                         ids=["generic", "no-avx", "no-avx512"])
def test_the_width_is_that_of_the_instructions_numba_compiles_for(env, lanes, tmp_path):
    """Numba told to compile for another CPU than the host's (a cache shared between machines):
    four lanes without AVX-512 (eight would be split in narrower registers), one for the generic
    CPU (four ran slower there than one), and hashlib's digests."""
    import os
    import subprocess
    import sys

    code = ("import hashlib, numpy as np\nfrom pipeline.stats import blake2b\n"
            "buf = np.frombuffer(bytes(range(256)) * 3, np.uint8)\n"
            "starts, ends = np.arange(0, 300, 7), np.arange(0, 300, 7) + np.arange(0, 430, 10)\n"
            "want = [int.from_bytes(hashlib.blake2b(buf[a:b].tobytes(), digest_size=8).digest(), 'little')"
            " for a, b in zip(starts, ends)]\n"
            "assert blake2b.blake2b64_spans(buf, starts, ends).tolist() == want\nprint(blake2b.LANES)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), **env}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [lanes]


def test_writable_and_read_only_arrays_share_one_compiled_kernel():
    """A run hashes Arrow's read-only buffers and its own writable arrays (text_digests does both):
    each kind of array compiled the kernel again on an empty cache."""
    buf = np.arange(300, dtype=np.uint8)
    starts, ends = np.array([0, 7]), np.array([129, 300])
    read_only = np.frombuffer(buf.tobytes(), np.uint8)
    fixed = [np.frombuffer(a.astype(np.int64).tobytes(), np.int64) for a in (starts, ends)]
    for args in ((buf, starts, ends), (read_only, starts, ends), (buf, *fixed), (read_only, *fixed)):
        assert blake2b.blake2b64_spans(*args).tolist() == _want(buf, starts, ends)
    assert len(blake2b._spans_kernel.signatures) == 1
