"""glibc's allocator, tuned once for the broker process (`muster serve`).

glibc serves a block over its mmap threshold (128 KiB at first) with a fresh
mmap and raises the threshold, up to 32 MiB, only as such blocks are freed;
freed memory at the top of the heap past the trim threshold goes back to the
kernel. A broker allocates megabyte buffers all the time (a Produce frame, a
Fetch answer's record sets, a segment read), so under the moving thresholds
each one may be fresh pages: a page fault per 4 KiB and the kernel zeroing
them. Measured with rdkafka_performance, 60 MB of 1 KiB records, broker
loop-thread CPU (bench/README.md): produce 0.18-0.21 s -> 0.05-0.06 s, fetch
0.10-0.14 s -> 0.04 s. Fixed thresholds keep them on a reused heap; the cost
is at most TRIM_BYTES of freed heap kept mapped.
"""

from __future__ import annotations

import sys

MMAP_BYTES = 4 << 20  # blocks past this are still mmapped (a 100 MB frame)
TRIM_BYTES = 16 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h


def tune_malloc() -> bool:
    """Fixes glibc's mmap and trim thresholds; False where there is no glibc."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # 2 ms, only here

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES) and mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
