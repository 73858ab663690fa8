"""A process's peak resident memory, for the benches that report it.

``resource.getrusage(...).ru_maxrss`` is not it for a child process: Linux keeps the high-water
mark of the memory a process had before ``exec``, so a query process started by a bench that
holds 3 GB reports 3 GB (measured: a 13 MB child of a 3 GB parent read 3,085 MB).
``VmHWM`` in ``/proc/self/status`` is the process's own; elsewhere ``ru_maxrss`` stands in.

    >>> peak_rss_mb() > 0 and peak_rss_mb() >= anon_rss_mb() >= 0
    True
"""

from __future__ import annotations

import resource
import sys


def peak_rss_mb() -> float:
    """Peak resident memory of this process since its ``exec``, in MB (MiB)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def anon_rss_mb() -> float:
    """This process's own resident memory now (``RssAnon``: not the pages of files it maps,
    which are the page cache's), in MB (MiB); 0 where ``/proc`` has no such line."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("RssAnon")), 0) / 1024
    except OSError:
        return 0.0
