"""The peak memory of a process's own image, to paste into a script or a conftest.

``getrusage(RUSAGE_SELF).ru_maxrss`` is not that for a process a test started: Linux
carries the high-water mark of the image it replaced into it at exec, and a child that
``subprocess`` (v)forked from a pytest worker starts from the worker's peak, which grows
with every test the worker ran. ``VmHWM`` in ``/proc/self/status`` is the peak of this
image alone; other systems fall back to ``ru_maxrss``.
"""

PEAK_KIB = '''
def peak_kib():
    """Peak resident memory of this process's own image, in KiB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    import resource, sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak
'''
