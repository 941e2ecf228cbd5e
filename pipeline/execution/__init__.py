"""Where the work runs: the only package that imports Dask.

* :mod:`pipeline.execution.cluster`: open a client (local cluster, existing scheduler) or none (sync);
* :mod:`pipeline.execution.driver`: run a :class:`pipeline.config.RunConfig` (units, the waves, retries,
  resume, the run folder written);
* :mod:`pipeline.execution.waves`: the job's graph (wave 1, duplicates, wave 2, the statistics tree);
* :mod:`pipeline.execution.executors`: where its tasks run (in this process or on a Dask cluster);
* :mod:`pipeline.execution.plugin`, :mod:`pipeline.execution.warmup`: workers set up, kernels compiled;
* :mod:`pipeline.execution.progress`: progress bar / periodic log lines;
* :mod:`pipeline.execution.dataframe`: Dask DataFrame in, Dask DataFrame out.
"""
