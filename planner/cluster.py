"""Where independent solves run: in this process, on a local Dask cluster (`--jobs N`
workers), or on an existing one (`--scheduler ADDRESS`, started with `dask scheduler` and
`dask worker`). Results come back in the order the tasks were given, so they do not
depend on where or in which order the tasks ran; a task whose worker is lost is run again
(Dask's retries), never counted twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack

from planner import interrupt

RETRIES = 2  # a task whose worker dies is run again this many times


class Runner:
    """`map(fn, tasks)` on the chosen workers. Use as a context manager."""

    def __init__(self, jobs: int = 1, scheduler: str | None = None,
                 processes: bool = True):
        self.jobs, self.scheduler, self.processes = max(1, jobs), scheduler, processes
        self.client = None
        self.cluster = None
        self._stack = ExitStack()

    @property
    def workers(self) -> int:
        if self.client is None:
            return 1
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def __enter__(self) -> "Runner":
        if self.scheduler is None and self.jobs <= 1:
            return self
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            self.client = Client(self.scheduler)
        else:
            self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1,
                                        processes=self.processes,
                                        dashboard_address=":0")  # any free port
            self.client = Client(self.cluster)
            self._stack.enter_context(interrupt.ending(self._no_restarts))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def _no_restarts(self) -> None:
        """Tell the local cluster's nannies that their workers are ending on purpose, so
        none starts a new worker (they restart a worker that dies while running)."""
        from distributed.core import Status

        for nanny in list(self.cluster.workers.values()):
            nanny.status = Status.closing_gracefully  # the nanny closes when it ends

    def map(self, fn: Callable, tasks: Iterable,
            done: Callable[[int, int, int], None] | None = None) -> list:
        """fn(task) for every task, in the tasks' order; `done(index, count, total)` after
        each (index: the task's place in `tasks`)."""
        tasks = list(tasks)
        if self.client is None:
            results = []
            for task in tasks:
                results.append(fn(task))
                if done:
                    done(len(results) - 1, len(results), len(tasks))
            return results
        import dask
        from distributed import as_completed

        # each task carries its scenario (some 0.7 MiB at 200x40x24): in the graph, not
        # scattered, so that a lost worker's task can run again (scattered data is lost
        # with its worker); Dask's warning about a large graph would only alarm the user
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1 GiB"}):
            futures = self.client.map(fn, tasks, retries=RETRIES, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list = [None] * len(tasks)
        count = 0
        for future in as_completed(futures):
            i = index[future.key]
            results[i] = future.result()
            count += 1
            if done:
                done(i, count, len(tasks))
        return results
