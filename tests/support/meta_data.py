"""Generated judged data with the hard cases: ties (scores on a 0.05 grid, human scores 1..5),
NaNs on both sides, documents whose metric or human column is constant, a document with one
judged system, a system judged on no document, and ids that carry the system."""
from __future__ import annotations

import numpy as np
import pandas as pd

TYPES = ("rouge1", "rougeL")
STATNAMES = ("precision", "recall", "fmeasure")


def generated(n_sys: int = 7, n_docs: int = 12, seed: int = 0, id_with_system: bool = False):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sys):
        for d in range(n_docs):
            r = {"system": f"s{s}", "id": f"d{d:02d}:s{s}" if id_with_system else f"d{d:02d}"}
            for t in TYPES:
                for st in STATNAMES:
                    r[f"{t}_{st}"] = np.nan if rng.random() < 0.08 else round(rng.integers(0, 20) / 20, 2)
            r["human"] = np.nan if rng.random() < 0.08 else float(rng.integers(1, 6))
            rows.append(r)
    df = pd.DataFrame(rows)
    cols = [f"{t}_{st}" for t in TYPES for st in STATNAMES]
    doc = df["id"].str[:3]
    df.loc[doc == "d00", "rouge1_precision"] = 0.5          # constant metric column
    df.loc[doc == "d01", "human"] = 3.0                      # constant human column
    df.loc[(doc == "d02") & (df["system"] != "s0"), "human"] = np.nan   # one judged system
    df.loc[df["system"] == f"s{n_sys - 1}", "human"] = np.nan          # a system never judged
    scores = df[["system", "id", *cols]]
    human = df[["system", "id", "human"]].rename(columns={"human": "rel"})
    return scores, human, cols
