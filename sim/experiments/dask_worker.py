"""Dask worker set-up for batches and tournaments (imported only when a Dask executor is opened: ``distributed``
is an optional extra)."""
from __future__ import annotations

import signal
import threading

from distributed import Worker
from distributed.diagnostics.plugin import WorkerPlugin

from sim.logs import configure_logging, route_library_logging


class LoggingPlugin(WorkerPlugin):
    """Makes a Dask worker log at the driver's level (:func:`sim.logs.configure_logging`, Dask's own
    ``distributed`` loggers included: :func:`sim.logs.route_library_logging`) and ignore Ctrl-C (SIGINT: the
    driver handles it, stores what finishes and closes the cluster; a worker that took it would die with a
    traceback), as a process-pool worker does.  Registered once per client, it runs on every worker now and on any
    that joins or is restarted by its nanny later."""

    def __init__(self, level: str) -> None:
        self.level = level

    def setup(self, worker: Worker) -> None:
        """Called by the worker when the plug-in is registered or the worker starts."""
        configure_logging(self.level)
        route_library_logging(self.level)
        if threading.current_thread() is threading.main_thread():   # a worker process's event loop: yes
            signal.signal(signal.SIGINT, signal.SIG_IGN)
