"""Low-level numba pieces of the compiled scans: unaligned 64-bit loads and stores (LLVM
intrinsics numba lacks), UTF-8 writes, and a ``str``'s own buffer -> UTF-8 bytes.

Shared by the default tokenizer's scan (:mod:`pipeline.text.scan`) and the unicode
profile's (:mod:`pipeline.text.unicode_scan`).
"""
from __future__ import annotations

import warnings

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.extending import intrinsic

try:  # numba's own code-point read: the scan reads Python's str buffer in place
    from numba.cpython.unicode import _get_code_point as get_code_point
except ImportError:  # pragma: no cover - numba moved it: scan UTF-8 bytes instead
    get_code_point = None

HIGH = np.uint64(0x8080808080808080)  # the high bit of every byte
_HIGH16 = np.uint64(0xFF80FF80FF80FF80)  # a UCS-2 unit >= 0x80
_HIGH32 = np.uint64(0xFFFFFF80FFFFFF80)  # a UCS-4 unit >= 0x80


@intrinsic
def load_u64(typingctx, arr, i):
    """Bytes ``arr[i:i+8]`` of a uint8 array as one unaligned little-endian load (numba has
    no such load; eight byte loads are not merged and cost more than the classification).
    The caller guarantees ``i + 8 <= arr.shape[0]``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(arr, i), codegen


@intrinsic
def store_u64(typingctx, arr, i, value):
    """``arr[i:i+8] = value``'s little-endian bytes, one unaligned store; ``i + 8 <= arr.shape[0]``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()
    return types.void(arr, i, types.uint64), codegen


@intrinsic
def prefetch(typingctx, arr, i):
    """Hint that ``arr[i]`` will be read soon (LLVM's prefetch: read, keep in all cache levels).
    A hash table's probes miss the cache at random; asking for a slot several tokens ahead
    overlaps those misses.  No effect on results; ``i`` may be any index (a prefetch never faults)."""
    if not (isinstance(arr, types.Array) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            "llvm.prefetch.p0")
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), i8p)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


@intrinsic
def _load_u64_ptr(typingctx, data, offset):
    """Eight bytes at ``data + offset`` (a str's buffer, numba's ``voidptr``) as one unaligned
    load; the caller keeps ``offset + 8`` within the buffer."""
    if not (data == types.voidptr and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        base = builder.bitcast(args[0], ir.IntType(8).as_pointer())
        ptr = builder.bitcast(builder.gep(base, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(types.voidptr, offset), codegen


if config.DISABLE_JIT:  # pragma: no cover - NUMBA_DISABLE_JIT=1 runs the kernels as Python, where an
    # intrinsic cannot run: these do the same in Python, and the encoder scans UTF-8 bytes.
    # The kernels' uint64 hashes wrap on purpose, as compiled; NumPy scalars would warn each time
    warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, r"pipeline\.")
    get_code_point = None

    def load_u64(arr, i):
        return np.uint64(int.from_bytes(arr[i:i + 8].tobytes(), "little"))

    def store_u64(arr, i, value):
        arr[i:i + 8] = np.frombuffer(int(value).to_bytes(8, "little"), dtype=np.uint8)

    def prefetch(arr, i):
        pass


@njit(cache=True, nogil=True, inline="always")
def _pack_ucs2(x):
    """Four UCS-2 units, each < 0x80, as four bytes (the low half of the result)."""
    y = x | (x >> np.uint64(8))
    return (y & np.uint64(0xFFFF)) | ((y >> np.uint64(16)) & np.uint64(0xFFFF0000))


@njit(cache=True, nogil=True, inline="always")
def _pack_ucs4(x):
    """Two UCS-4 units, each < 0x80, as two bytes (the low 16 bits of the result)."""
    return (x & np.uint64(0xFF)) | ((x >> np.uint64(24)) & np.uint64(0xFF00))


@njit(cache=True, nogil=True, inline="always")
def read8(data, kind, i):
    """(all ASCII, their bytes as one word) of the eight code units from code unit ``i`` of a
    str's buffer ``data`` of ``kind`` bytes a unit; the caller keeps ``i + 8`` within the str."""
    if kind == 1:
        x = _load_u64_ptr(data, i)
        return (x & HIGH) == 0, x
    if kind == 2:
        x = _load_u64_ptr(data, 2 * i)
        z = _load_u64_ptr(data, 2 * i + 8)
        return ((x | z) & _HIGH16) == 0, _pack_ucs2(x) | (_pack_ucs2(z) << np.uint64(32))
    a = _load_u64_ptr(data, 4 * i)
    b = _load_u64_ptr(data, 4 * i + 8)
    c = _load_u64_ptr(data, 4 * i + 16)
    e = _load_u64_ptr(data, 4 * i + 24)
    ok = ((a | b | c | e) & _HIGH32) == 0
    return ok, (_pack_ucs4(a) | (_pack_ucs4(b) << np.uint64(16)) | (_pack_ucs4(c) << np.uint64(32))
                | (_pack_ucs4(e) << np.uint64(48)))


@njit(cache=True, nogil=True, inline="always")
def put_utf8(out, o, cp):
    """Code point ``cp``'s UTF-8 bytes at ``out[o:]`` (a surrogate as three bytes, as
    ``surrogatepass``); returns the next position."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@njit(cache=True, nogil=True)
def str_to_utf8(text, offs):
    """A str's documents ``text[offs[d]:offs[d+1]]`` (code points) -> (UTF-8 bytes, byte
    offsets), ``surrogatepass`` as ``str.encode``: read in place, runs of ASCII eight code
    units at a time (:func:`read8`; ``str.encode`` of a 2-byte str costs more than the whole
    scan)."""
    kind = text._kind
    n = offs[offs.shape[0] - 1] - offs[0]
    out = np.empty(n * (2 if kind == 1 else (3 if kind == 2 else 4)) + 8, dtype=np.uint8)
    out_offs = np.empty_like(offs)
    out_offs[0] = 0
    data = text._data
    o = 0
    for d in range(offs.shape[0] - 1):
        i = offs[d]
        end = offs[d + 1]
        while i < end:
            if i + 8 <= end:
                ok, x = read8(data, kind, i)
                if ok:
                    store_u64(out, o, x)
                    o += 8
                    i += 8
                    continue
            o = put_utf8(out, o, get_code_point(text, i))
            i += 1
        out_offs[d + 1] = o
    return out[:o], out_offs
