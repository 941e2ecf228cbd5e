"""Where the work runs: the only package that imports Dask.

* :mod:`pipeline.execution.cluster`: open a client (local cluster, existing scheduler) or none (sync);
* :mod:`pipeline.execution.driver`: run a :class:`pipeline.config.RunConfig` (plan, map, retry,
  resume, reduce statistics on the workers, write the run folder);
* :mod:`pipeline.execution.progress`: progress bar / periodic log lines;
* :mod:`pipeline.execution.dataframe`: Dask DataFrame in, Dask DataFrame out.
"""
