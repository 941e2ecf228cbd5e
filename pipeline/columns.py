"""Arrow string columns as flat NumPy views, for the compiled code that reads them in place
(the encoder's scan, the statistics' key hashes).  Arrow and NumPy only: no I/O."""
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
