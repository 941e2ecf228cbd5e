"""Arrow string and list columns as flat NumPy views, for the compiled code that reads them in
place (the encoder's scan, the statistics' key hashes, the text digests).  Arrow and NumPy only:
no I/O."""
from __future__ import annotations

import numpy as np


def utf8_buffers(arr) -> tuple[np.ndarray, np.ndarray]:
    """(bytes as uint8, int64 offsets) of an Arrow string array: text ``i`` is
    ``bytes[offs[i]:offs[i+1]]``; zero-copy for the bytes."""
    import pyarrow as pa

    _, offsets, data = arr.buffers()
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offs = np.frombuffer(offsets, dtype=width)[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    buf = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(1, np.uint8)
    return buf, offs


def list_values(arr):
    """(int64 offsets from 0, the values) of an Arrow list array: row ``i``'s items are
    ``values[offs[i]:offs[i+1]]``.  Read from the array's own offsets buffer and a slice of its
    values (a sliced list array's offsets point into all its values; no compute call)."""
    import pyarrow as pa

    if len(arr) == 0:
        return np.zeros(1, dtype=np.int64), arr.values.slice(0, 0)
    width = np.int64 if pa.types.is_large_list(arr.type) else np.int32
    offs = np.frombuffer(arr.buffers()[1], dtype=width)[arr.offset: arr.offset + len(arr) + 1].astype(np.int64)
    values = arr.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    offs -= offs[0]
    return offs, values
