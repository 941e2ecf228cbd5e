"""Deprecated alias (one release): ``python -m pipeline.warmup`` is ``python -m pipeline.execution.warmup``."""
import sys

from pipeline.execution.warmup import main

if __name__ == "__main__":
    sys.exit(main())
