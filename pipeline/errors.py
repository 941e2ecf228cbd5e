"""Exit statuses shared by the commands (``cli``, ``nightly``, ``quick``): a module of its own so
that ``nightly`` needs no import of ``cli``, which imports it."""

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_STRICT, EXIT_RUN_FOLDER = 0, 1, 2, 3, 4
EXIT_NO_ROWS = 5
EXIT_BUSY = 6
EXIT_NOT_COMPARABLE = 3   # compare: the runs cannot be compared (coverage, settings)
EXIT_TIMEOUT = 124        # nightly: the scoring ran past timeout_minutes (as GNU timeout's)
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141    # 128 + SIGPIPE: the reader (e.g. `head`) closed our output early
