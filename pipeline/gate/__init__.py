"""The regression gate: did a run's outputs move, is one system better than another, and the
reports that show it.

* :mod:`.compare`: two runs (or a run and its history) -> verdicts per system, rouge type and statistic.
* :mod:`.bands`: the band a move is held against (history, replicates, paired bootstrap).
* :mod:`.control`: Phase I/II: which runs are in control, the base, the recorded verdict, ``accept``.
* :mod:`.runs`: runs as the gate sees them (``RunData``), finding the previous runs and the history.
* :mod:`.significance`: system against system (paired bootstrap, approximate randomization, Holm).
* :mod:`.format`: the terminal text; :mod:`.report`: single-file HTML reports.
"""

# the smallest |delta F| a band alarms on; here, in the package's light __init__, so that the CLI's
# parser gives it as a default without loading the gate (pandas, numba)
DEFAULT_MIN_EFFECT = 0.002
