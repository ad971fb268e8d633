"""Dask worker set-up for batches and tournaments (imported only when a Dask executor is opened: ``distributed``
is an optional extra)."""
from __future__ import annotations

from distributed import Worker
from distributed.diagnostics.plugin import WorkerPlugin

from sim.logs import configure_logging


class LoggingPlugin(WorkerPlugin):
    """Makes a Dask worker log at the driver's level (:func:`sim.logs.configure_logging`): registered once per
    client, it runs on every worker now and on any that joins or is restarted by its nanny later."""

    def __init__(self, level: str) -> None:
        self.level = level

    def setup(self, worker: Worker) -> None:
        """Called by the worker when the plug-in is registered or the worker starts."""
        configure_logging(self.level)
