"""The commands: :mod:`.main` (argparse, ``score``/``show``/``compare``/``report``, and the one map
from an error to its exit status), :mod:`.eval` (``rouge-pipeline eval``, in process) and
:mod:`.nightly` (the scheduled job)."""
