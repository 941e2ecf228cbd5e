"""BLAKE2b-64 (RFC 7693: an 8-byte digest, no key) of many byte spans, compiled.

The digest of the example keys (the bootstrap's streams), of the texts (``text_digest``) and of
the JSONL lines (``line_digest``): ``hashlib.blake2b(span, digest_size=8)`` read as a
little-endian uint64, which is also the readable specification and the fallback without numba.

The compiled path hashes ``LANES`` spans at once, one in each lane of LLVM vectors (AVX-512 or
AVX2 registers; one span at a time for the generic CPU): every lane's next 128-byte block is
loaded as it lies in memory (a last block from a zero-padded copy), transposed in registers into
the message words, and compressed by the twelve rounds written out as vector IR
(:func:`_compress_lanes`); a lane takes the next span as soon as its own ends, so every lane
works in every call and the spans are read in order.
"""
from __future__ import annotations

import hashlib

import numpy as np

IV = (0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
      0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179)
_IV = np.array(IV, dtype=np.uint64)   # a constant in the compiled kernel
SIGMA = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
         (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
         (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
         (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
         (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
         (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
         (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
         (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10),
         (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
         (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0))
_PARAM = 0x01010008  # digest length 8, no key, fanout 1, depth 1 (the first parameter word)


def blake2b64_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """BLAKE2b-64 of ``buf[starts[i]:ends[i]]`` (uint8 ``buf``, integer spans; spans may overlap or
    leave gaps)."""
    buf = np.asarray(buf)
    starts, ends = np.asarray(starts), np.asarray(ends)
    for a in (starts, ends):   # the int64 cast below would truncate a float (or take a bool) silently
        if a.size and a.dtype.kind not in "iu":
            raise TypeError(f"blake2b64_spans: integer starts and ends, not {a.dtype}")
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    # the kernel reads unchecked: one end a start, and bytes (a wider dtype would be cast, not read)
    if buf.ndim != 1 or buf.dtype != np.uint8 or starts.ndim != 1 or ends.shape != starts.shape:
        raise ValueError("blake2b64_spans: a one-dimensional uint8 buffer and as many starts as ends, "
                         f"not {buf.dtype}{list(buf.shape)}, {list(starts.shape)} and {list(ends.shape)}")
    out = np.empty(starts.shape[0], dtype=np.uint64)
    if len(starts) and (starts.min() < 0 or (ends < starts).any() or ends.max() > len(buf)):
        raise ValueError("blake2b64_spans: a span outside the buffer")
    if _numba is None or _numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: an intrinsic cannot run uncompiled
        raw = buf.tobytes()
        return np.array([int.from_bytes(hashlib.blake2b(raw[a:b], digest_size=8).digest(), "little")
                         for a, b in zip(starts.tolist(), ends.tolist())], dtype=np.uint64)
    # read-only views: one compiled kernel whether the caller's arrays are writable or not
    _spans_kernel(_readonly(np.ascontiguousarray(buf)), _readonly(starts), _readonly(ends), out)
    return out


def _readonly(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


try:  # numba is a project dependency; hashlib above is the fallback and the spec.
    import numba as _numba
except Exception:  # pragma: no cover
    _numba = None

if _numba is not None:
    from llvmlite import ir as _ir
    from numba.core import codegen as _codegen, config as _config
    from numba import types as _types
    from numba.extending import intrinsic as _intrinsic

    from pipeline.text.intrinsics import load_u64   # numba's unaligned 8-byte load (only with numba)

    # eight 64-bit lanes fill an AVX-512 register; four an AVX2 one (eight there would spill); one
    # for the generic CPU (NUMBA_CPU_NAME=generic, a cache shared between machines): four lanes in
    # its 128-bit registers ran slower than one. The features numba compiles for, not the host's:
    # NUMBA_CPU_NAME, NUMBA_CPU_FEATURES and NUMBA_ENABLE_AVX=0 take AVX-512 away
    _FEATURES = (_codegen.get_host_cpu_features() if _config.CPU_FEATURES is None else _config.CPU_FEATURES).split(",")
    _GENERIC = str(_config.CPU_NAME).lower() == "generic" and "+avx2" not in _FEATURES
    LANES = 8 if "+avx512f" in _FEATURES else 1 if _GENERIC else 4
    _I64 = _ir.IntType(64)
    _VEC = _ir.VectorType(_I64, LANES)

    def _splat(c):
        return _ir.Constant(_VEC, [_ir.Constant(_I64, c)] * LANES)

    def _transposed(builder, rows):
        """The columns of the square matrix of vectors ``rows``: for each bit ``d``, bit ``d``
        of the row index and of the column index swapped (two-source shuffles)."""
        n, x, d = len(rows), list(rows), len(rows) // 2
        while d:
            lo = _ir.Constant(_ir.VectorType(_ir.IntType(32), n), [i if not i & d else n + i - d for i in range(n)])
            hi = _ir.Constant(_ir.VectorType(_ir.IntType(32), n), [i + d if not i & d else n + i for i in range(n)])
            for k in range(n):
                if not k & d:
                    x[k], x[k + d] = builder.shuffle_vector(x[k], x[k + d], lo), builder.shuffle_vector(x[k], x[k + d], hi)
            d //= 2
        return x

    def _message(builder, addr):
        """The 16 message words (a vector each, one lane a span) of the blocks at the lanes'
        addresses ``addr`` (a pointer to LANES int64): rows loaded as they lie, transposed."""
        lanes = [builder.load(builder.gep(addr, [_ir.Constant(_I64, k)])) for k in range(LANES)]
        m = []
        for c in range(16 // LANES):
            rows = [builder.load(builder.inttoptr(builder.add(a, _ir.Constant(_I64, 8 * LANES * c)), _VEC.as_pointer()),
                                 align=1) for a in lanes]
            m += _transposed(builder, rows)
        return m

    def _rounds(builder, v, m):
        """BLAKE2b's twelve rounds on the working vectors ``v`` (in place)."""
        def rotr(x, n):   # LLVM emits one rotate instruction for this
            return builder.or_(builder.lshr(x, _splat(n)), builder.shl(x, _splat(64 - n)))

        def g(a, b, c, d, x, y):
            v[a] = builder.add(builder.add(v[a], v[b]), x)
            v[d] = rotr(builder.xor(v[d], v[a]), 32)
            v[c] = builder.add(v[c], v[d])
            v[b] = rotr(builder.xor(v[b], v[c]), 24)
            v[a] = builder.add(builder.add(v[a], v[b]), y)
            v[d] = rotr(builder.xor(v[d], v[a]), 16)
            v[c] = builder.add(v[c], v[d])
            v[b] = rotr(builder.xor(v[b], v[c]), 63)

        for r in range(12):
            s = SIGMA[r % 10]
            for j, (a, b, c, d) in enumerate(((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                                              (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))):
                g(a, b, c, d, m[s[2 * j]], m[s[2 * j + 1]])

    @_intrinsic
    def _compress_lanes(typingctx, h, addr, t, f):
        """``h`` (uint64, word ``w`` of lane ``k`` at ``w * LANES + k``) becomes BLAKE2b's
        compression of ``h`` with the 128-byte blocks at the lanes' addresses ``addr`` (int64),
        byte counters ``t`` and final-block flags ``f`` (all ones or zero; uint64 a lane each)."""
        if not all(isinstance(a, _types.Array) and a.dtype == want for a, want in
                   ((h, _types.uint64), (addr, _types.int64), (t, _types.uint64), (f, _types.uint64))):
            return None

        def codegen(context, builder, sig, args):
            data = [context.make_array(sig.args[k])(context, builder, args[k]).data for k in range(4)]

            def at(p, w):
                return builder.bitcast(builder.gep(p, [_ir.Constant(_I64, w * LANES)]), _VEC.as_pointer())

            h0 = [builder.load(at(data[0], w), align=8) for w in range(8)]
            m = _message(builder, data[1])
            t, f = builder.load(at(data[2], 0), align=8), builder.load(at(data[3], 0), align=8)
            v = h0 + [_splat(IV[0]), _splat(IV[1]), _splat(IV[2]), _splat(IV[3]),
                      builder.xor(_splat(IV[4]), t), _splat(IV[5]), builder.xor(_splat(IV[6]), f), _splat(IV[7])]
            _rounds(builder, v, m)
            for w in range(8):
                builder.store(builder.xor(h0[w], builder.xor(v[w], v[w + 8])), at(data[0], w), align=8)
            return context.get_dummy_value()
        return _types.void(h, addr, t, f), codegen

    @_numba.njit(cache=True, nogil=True, inline="always")
    def _start_lane(h, k):  # pragma: no cover - compiled
        h[k] = _IV[0] ^ np.uint64(_PARAM)
        for w in range(1, 8):
            h[w * LANES + k] = _IV[w]

    @_numba.njit(cache=True, nogil=True, inline="always")
    def _pad_block(buf, p, rest, pad, q):  # pragma: no cover - compiled
        """``buf[p:p + rest]`` (``rest <= 128``) zero-padded into the words ``pad[q:q + 16]``."""
        full = rest >> 3
        for w in range(full):
            pad[q + w] = load_u64(buf, p + 8 * w)
        for w in range(full, 16):
            pad[q + w] = 0
        word = np.uint64(0)
        for j in range(rest & 7):   # the tail's bytes, little-endian
            word |= np.uint64(buf[p + 8 * full + j]) << np.uint64(8 * j)
        if rest & 7:
            pad[q + full] = word

    @_numba.njit(cache=True, nogil=True)
    def _spans_kernel(buf, starts, ends, out):  # pragma: no cover - compiled
        n = starts.shape[0]
        h = np.empty(8 * LANES, np.uint64)
        pad = np.zeros(16 * LANES, np.uint64)    # each lane's zero-padded last block
        addr = np.zeros(LANES, np.int64)          # each lane's block (in buf, or its pad)
        t = np.zeros(LANES, np.uint64)
        f = np.zeros(LANES, np.uint64)
        span = np.full(LANES, -1, np.int64)       # each lane's span (-1: none left)
        at = np.zeros(LANES, np.int64)            # where in it its next block starts
        nxt = 0
        active = 0
        for k in range(LANES):
            addr[k] = pad.ctypes.data + 128 * k   # an idle lane hashes its pad, unused
            if nxt < n:
                span[k] = nxt
                nxt += 1
                active += 1
                _start_lane(h, k)
        while active:
            for k in range(LANES):
                i = span[k]
                if i < 0:
                    continue
                p = starts[i] + at[k]
                rest = ends[i] - p
                if rest > 128:   # a whole block, not the span's last: read where it lies
                    addr[k] = buf.ctypes.data + p
                    t[k] += np.uint64(128)
                    f[k] = np.uint64(0)
                    continue
                _pad_block(buf, p, rest, pad, 16 * k)   # the last block (an empty span: zeros)
                addr[k] = pad.ctypes.data + 128 * k
                t[k] += np.uint64(rest)
                f[k] = np.uint64(0xFFFFFFFFFFFFFFFF)
            _compress_lanes(h, addr, t, f)
            for k in range(LANES):
                i = span[k]
                if i < 0:
                    continue
                if f[k] == 0:
                    at[k] += 128
                    continue
                out[i] = h[k]
                if nxt < n:
                    span[k] = nxt
                    nxt += 1
                    at[k] = 0
                    t[k] = 0
                    _start_lane(h, k)
                else:
                    span[k] = -1
                    active -= 1
