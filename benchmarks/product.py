"""The product as the benchmarks on real histories run it: one night through ingestion and the analysis tasks, and
the daily scan (``benchmarks/injected_steps.py``, ``benchmarks/real_histories.py``). Called in a child process
whose Django is set up."""


def product_night(document) -> None:
    """One night through the product as it runs in production: the run is ingested, and the analysis tasks
    that ingestion enqueues (the run's comparison, its alerts, the change points of the series it flagged) run
    here, as the analysis worker would run them."""
    from results import queue, services

    with queue.analysis_in_process():
        services.ingest_run(document=document, user=None)


def daily_scan() -> None:
    """The daily beat task (``scan-change-points``), once a night."""
    from results import tasks

    tasks.scan_change_points.apply().get()
