"""A benchmark's count of a command's whole process tree.

dbt's builds run in processes forked by the run's fork server (``cost_pipeline/dbt_warm.py``). The fork server reaps
them, but nobody reaps the fork server: it outlives the command's own process by a moment (it ends on its parent's
death) and is then init's. ``RUSAGE_CHILDREN`` counts only descendants that were waited for, so a benchmark's CPU
seconds and peak RSS left every dbt build out. A process that adopts orphans (``PR_SET_CHILD_SUBREAPER``) and reaps
them after the command counts the fork server and, through it, each build it reaped, as it counted dbt before.
"""

from __future__ import annotations

import ctypes
import os

_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants whose parents end before them (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_orphans() -> None:
    """Wait for every remaining child, adopted ones included, so that ``RUSAGE_CHILDREN`` counts them."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return
