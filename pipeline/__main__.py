"""``python -m pipeline score|show ...`` (same as the ``rouge-pipeline`` console script)."""
import sys

from pipeline.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
