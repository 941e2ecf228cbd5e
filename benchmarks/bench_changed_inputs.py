"""What the changed-input checks cost a read: every byte-range unit of one JSONL file read with
``read_unit``, the checks on (size, a range's bytes, lines and end) vs. patched out, in one
process with alternating rounds (this machine's speed drifts between minutes).

    python benchmarks/bench_changed_inputs.py             # 200,000 lines, 10 units: the Arrow fast path
    python benchmarks/bench_changed_inputs.py --crlf      # 50,000 CRLF lines: the line-by-line reader

Prints the median of 3 rounds each way and their ratio (checks on / off).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--crlf", action="store_true", help="CRLF lines: the fast path declines them")
    args = ap.parse_args()
    import pipeline.io.records as rec
    import pipeline.io.streams as st
    from pipeline.io.input_spec import InputSpec
    from pipeline.io.readers import plan_units, read_unit

    n = 50_000 if args.crlf else 200_000
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.jsonl")
        with open(path, "w", newline="") as f:
            for i in range(n):
                f.write(json.dumps({"id": f"d{i}", "candidate": " ".join(rng.choices(words, k=40)),
                                    "references": [" ".join(rng.choices(words, k=40))]})
                        + ("\r\n" if args.crlf else "\n"))
        spec = InputSpec.from_config({"paths": path})
        units = plan_units(spec, n // 10)
        on = (st.check_range, st.check_size, rec.check_range)
        off = (lambda *a, **k: None,) * 3

        def use(fns):
            st.check_range, st.check_size, rec.check_range = fns

        def one_round() -> float:
            t = time.perf_counter()
            assert sum(read_unit(spec, u)[0].num_rows for u in units) == n
            return time.perf_counter() - t

        one_round()
        times: dict[str, list[float]] = {"on": [], "off": []}
        for k in range(6):
            for name, fns in ((("on", on), ("off", off)) if k % 2 else (("off", off), ("on", on))):
                use(fns)
                times[name].append(one_round())
        use(on)
        med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
        print(f"{len(units)} units, {os.path.getsize(path) >> 20} MiB{' CRLF' if args.crlf else ''}: "
              f"checks on {med['on']:.3f}s, off {med['off']:.3f}s, ratio {med['on'] / med['off']:.3f}")


if __name__ == "__main__":
    main()
