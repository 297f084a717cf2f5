"""Markers for `sfz hunt script.py`: put `start()` / `end()` (or the `@trace` decorator) around
the code to hunt. Run outside sfz, they do nothing; under sfz's tracer they delimit the torch
operations it records. Without markers the tracer records the whole script (a bounded number
of operations)."""
import functools

# Set by sfz's tracer (`python -m sfz_trace.tracer`); None when the script runs on its own.
_hooks = None


def start():
    """Begin recording torch operations."""
    if _hooks is not None:
        _hooks.start()


def end():
    """Stop recording; the rest of the script is not run under sfz."""
    if _hooks is not None:
        _hooks.end()


def trace(fn):
    """Record the torch operations of one call of `fn` (the first call, under sfz)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start()
        try:
            return fn(*args, **kwargs)
        finally:
            end()

    return wrapper
