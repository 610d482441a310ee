"""Where independent solves run: in this process, on a local Dask cluster (`--jobs N`
workers), or on an existing one (`--scheduler ADDRESS`, started with `dask scheduler` and
`dask worker`). Results come back in the order the tasks were given, so they do not
depend on where or in which order the tasks ran; a task whose worker is lost is run again
(Dask's retries), never counted twice.

A cluster that cannot do the work is said so, within the command's time: a scheduler
that does not answer (or is not Dask's) within CONNECT_S, one with no worker, tasks not
done by the command's deadline (a worker lost, none left): `ClusterUnusable` (bad
input) and `ClusterError`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack

from planner import interrupt

RETRIES = 2  # a task whose worker dies is run again this many times
CONNECT_S = 10.0  # the most a scheduler may take to answer, or to show a worker
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(?:[^\s:/\[\]]+|\[[0-9A-Fa-f:]+\]):(\d+)")


class ClusterError(RuntimeError):
    """The cluster did not do the work: its tasks were not done in time. `results` holds
    what the tasks that were done returned (None for the others), in the tasks' order."""

    def __init__(self, message: str, results: list | None = None, lost: bool = False):
        super().__init__(message)
        self.results = results or []
        self.lost = lost  # workers or the scheduler lost, not the time share too short


class ClusterUnusable(ClusterError):
    """The cluster given cannot be used: its scheduler does not answer (or is not a Dask
    scheduler), or it has no worker. Bad input, like an address that is not one."""


def address_problem(address: str) -> str | None:
    """Why `address` is not a scheduler's address (tcp://HOST:PORT, as `dask scheduler`
    prints it), or None."""
    match = _ADDRESS.fullmatch(address.strip())
    if match is None:
        return f"'{address}' is not a scheduler address: give tcp://HOST:PORT"
    if not 0 < int(match.group(1)) < 65536:
        return f"'{address}': port {match.group(1)} is not a port (1-65535)"
    return None


def _answers(address: str, wait: float) -> None:
    """Return once a Dask scheduler at `address` has answered a handshake; TimeoutError
    after `wait` seconds (a port that answers but is not Dask's, e.g. a web server, holds
    Dask's own client forever, whatever its timeout)."""
    import asyncio
    import socket

    from distributed.comm import connect

    host, _, port = re.sub(r"^\w+://", "", address.strip()).rpartition(":")
    try:  # nothing listening is said at once: Dask's connect retries it until `wait`
        socket.create_connection((host.strip("[]"), int(port)), timeout=wait).close()
    except ConnectionRefusedError:
        raise ConnectionRefusedError("nothing listens at that port") from None

    async def shake() -> None:
        comm = await asyncio.wait_for(connect(address), wait)
        await comm.close()

    asyncio.run(shake())


class Runner:
    """`map(fn, tasks)` on the chosen workers. Use as a context manager."""

    def __init__(self, jobs: int = 1, scheduler: str | None = None,
                 processes: bool = True, until: float | None = None):
        self.jobs, self.scheduler, self.processes = max(1, jobs), scheduler, processes
        self.until = until  # time.perf_counter() by which every map must be done
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
            self.client = self._connect(Client)
        else:
            _quiet_resource_tracker()
            # a local worker's end as its nanny reads it ("exit status was already read,
            # will report exitcode 255") is no news to the user: it followed the
            # "interrupted" line where Ctrl-C reached the workers before the command's
            # own handler (an outside audit); a worker lost is said by the command
            logging.getLogger("distributed.process").setLevel(logging.ERROR)
            self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1,
                                        processes=self.processes,
                                        dashboard_address=":0")  # any free port
            self.client = Client(self.cluster)
            self._stack.enter_context(interrupt.ending(self._no_restarts))
        return self

    def _connect(self, Client):
        """A client of the scheduler, which has a worker; ClusterUnusable within twice
        CONNECT_S (or a quarter of the time left each) where it does not answer or has
        none."""
        wait = CONNECT_S if self.until is None else \
            min(CONNECT_S, max(1.0, (self.until - time.perf_counter()) / 4))
        try:
            _answers(self.scheduler, wait)
            client = Client(self.scheduler, timeout=wait)
        except (OSError, TimeoutError, ValueError) as e:
            # (an exception is never false: str(e), '' for a bare TimeoutError, is)
            raise ClusterUnusable(f"cannot reach a Dask scheduler at {self.scheduler} "
                                  f"within {wait:.0f} s ({type(e).__name__}: "
                                  f"{str(e) or 'no answer to its handshake'})") from None
        except Exception as e:  # something answers, not in Dask's protocol: a web server
            # read as Dask's frames asked for a 3 EiB buffer (MemoryError)
            raise ClusterUnusable(f"{self.scheduler} answers, but not as a Dask scheduler "
                                  f"does ({type(e).__name__}: {str(e)[:80]})") from None
        try:
            client.wait_for_workers(1, timeout=wait)
        except TimeoutError:
            client.close()
            raise ClusterUnusable(f"the Dask cluster at {self.scheduler} has no worker "
                                  f"(start one: dask worker {self.scheduler})") from None
        # a scheduler lost is said by the command, with what was done (ClusterError), not
        # by the client's own log lines and its reconnection's tracebacks
        for name in ("distributed.client", "distributed.core", "distributed.comm"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        return client

    def __exit__(self, *exc) -> None:
        self._stack.close()
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def _no_restarts(self) -> None:
        """Tell the local cluster's nannies that their workers are ending on purpose, so
        none starts a new worker (they restart a worker that dies while running), and
        leave their warnings about it unsaid."""
        from distributed.core import Status

        # its nannies' notes on the workers' ends ("exit status was already read") are
        # not news after the command's own "interrupted": errors alone from here
        logging.getLogger("distributed").setLevel(logging.ERROR)
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
        from concurrent.futures import CancelledError

        import dask
        from distributed import as_completed

        from planner.solve.work import at_pace

        # each task carries its scenario (some 0.7 MiB at 200x40x24): in the graph, not
        # scattered, so that a lost worker's task can run again (scattered data is lost
        # with its worker); Dask's warning about a large graph would only alarm the user
        lost = ClusterError(f"{len(tasks)} of {len(tasks)} tasks not done: the connection "
                            f"to the Dask scheduler was lost", [None] * len(tasks), lost=True)
        if self.client.status not in ("running", "connecting"):
            raise lost
        try:
            with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1 GiB"}):
                # at the command's pace: its reckonings, whatever the worker's machine
                futures = self.client.map(at_pace(fn), tasks, retries=RETRIES, pure=False)
        except (CancelledError, OSError, ValueError):  # ValueError: "No clients found"
            if self.client.status in ("running", "connecting"):
                raise
            raise lost from None
        index = {f.key: i for i, f in enumerate(futures)}
        workers = self.workers  # as the tasks start: a lost one shows at the end
        results: list = [None] * len(tasks)
        count = 0
        timeout = None if self.until is None else max(1.0, self.until - time.perf_counter())
        try:
            for future in as_completed(futures, timeout=timeout):
                i = index[future.key]
                results[i] = future.result()
                count += 1
                if done:
                    done(i, count, len(tasks))
        except TimeoutError:
            self.client.cancel(futures)
            left = len(self.client.scheduler_info().get("workers", {}))
            why = (f"workers lost ({left} left of {workers})" if left < workers
                   else "their share of the time was not enough")
            raise ClusterError(f"{len(tasks) - count} of {len(tasks)} tasks not done when "
                               f"the time ran out: {why}", results,
                               lost=left < workers) from None
        except (CancelledError, OSError):  # OSError: distributed's CommClosedError
            # the scheduler lost: what was done stands (an outside audit: a whatif whose
            # scheduler was killed had ended with "unexpected error", its variants done
            # thrown away)
            raise ClusterError(f"{len(tasks) - count} of {len(tasks)} tasks not done: the "
                               f"connection to the Dask scheduler was lost", results,
                               lost=True) from None
        return results


# multiprocessing's resource tracker (a process of its own, started with the local
# workers) warns of the workers' semaphores when Ctrl-C stops them before they free
# them: Python's text after the command's own "interrupted ... no file written"
# (an outside audit). The tracker cleans them up all the same.
TRACKER_WARNINGS = "ignore::UserWarning:multiprocessing.resource_tracker"


def _quiet_resource_tracker() -> None:
    """The resource tracker, when it starts (with the first local worker), leaves its
    warnings about semaphores left behind unsaid (TRACKER_WARNINGS)."""
    import os

    given = os.environ.get("PYTHONWARNINGS", "")
    if TRACKER_WARNINGS not in given:
        os.environ["PYTHONWARNINGS"] = ",".join(x for x in (given, TRACKER_WARNINGS) if x)
