"""Hugging Face ``evaluate`` integration: an offline metric script.

```python
import evaluate
from pipeline.hf import METRIC_PATH
rouge = evaluate.load(METRIC_PATH)        # no Hub access: the script ships with the package
rouge.compute(predictions=["the cat is on the mat"], references=["the cat sat on the mat"])
```
"""
from __future__ import annotations

import os

METRIC_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rouge_pipeline.py")

__all__ = ["METRIC_PATH"]
