"""Every row's signature names its coefficient and variant, level, grouping, skip rule, human
field and aggregation, systems and documents counted, the bootstrap and the ROUGE signature."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("scipy.stats")

from pipeline.meta import correlate  # noqa: E402

from support.meta_data import generated  # noqa: E402


def test_each_row_carries_the_settings_behind_its_number():
    scores, human, _ = generated(id_with_system=True)
    scores.attrs["signature"] = "rouge:1,L|tok:default|v:0.1.0"
    res = correlate(scores, human, field="rel", coefficients="kendall,kendall_c", doc_key="(.*):{system}$",
                    n_boot=20, resample="systems", confidence=0.9, seed=3)
    sigs = dict(zip(zip(res.rows["level"], res.rows["coefficient"]), res.rows["signature"]))
    assert sigs[("summary", "kendall")] == (
        "coef:kendall-tau-b|level:summary|doc:(.*):{system}$|skip:constant-or-lt3|human:rel-mean|systems:6|docs:12|"
        "boot:systems-20|ci:90|seed:3|v:0.1.0 + rouge:1,L|tok:default|v:0.1.0")
    assert sigs[("system", "kendall_c")].startswith("coef:kendall-tau-c|level:system|")
    assert "|skip:unjudged-systems|" in sigs[("system", "kendall_c")] and "|skip:none|" in sigs[("global", "kendall")]
    assert res.signature == ("doc:(.*):{system}$|human:rel-mean|systems:6|docs:12|boot:systems-20|ci:90|seed:3|"
                             "v:0.1.0 + rouge:1,L|tok:default|v:0.1.0")
    assert pd.DataFrame(res.to_dict()["rows"]).columns.tolist() == res.rows.columns.tolist()
