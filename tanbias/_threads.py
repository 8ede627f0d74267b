"""One way to spread independent work over the cores torch uses: threads, in order, with a bar.

The readings of a released model (one per layer) and the document bootstrap's resamples (one per
draw) are NumPy and torch calls that release the GIL, so threads use every core without copying
the arrays into processes. :func:`thread_map` is the one place they are spread.
"""

from __future__ import annotations

from typing import Callable, TypeVar

__all__ = ["thread_map", "default_workers"]

T = TypeVar("T")


def default_workers() -> int:
    """Threads for such work: one per core torch uses (its thread count), 1 without torch."""
    try:
        import torch
    except ImportError:                                    # the maths layer runs without torch
        return 1
    return max(1, torch.get_num_threads())


def thread_map(fn: Callable[[int], T], n: int, workers: int | None = None, progress: str | bool = False,
               unit: str = "item") -> list[T]:
    """``[fn(i) for i in range(n)]``, computed by up to ``workers`` threads, returned in order.

    Parameters
    ----------
    fn : callable
        Called once per index; it must not depend on the order of the calls (draw random numbers
        before, not inside).
    n : int >= 0
    workers : int >= 1, optional
        Default :func:`default_workers`; one worker (or one item) runs in the calling thread.
    progress : str or False
        A progress bar's title (tqdm), or False for none.
    unit : str
        The bar's unit.

    Returns
    -------
    list
        ``fn(i)`` for ``i`` in ``range(n)``; the first exception raised by a call propagates.

    Example
    -------
    >>> thread_map(lambda i: i * i, 4, workers=2)
    [0, 1, 4, 9]
    """
    workers = default_workers() if workers is None else int(workers)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc=str(progress), unit=unit)

    def one(i):
        out = fn(i)
        if bar is not None:
            bar.update()
        return out

    try:
        if min(workers, n) <= 1:
            return [one(i) for i in range(n)]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, n)) as pool:
            return list(pool.map(one, range(n)))
    finally:
        if bar is not None:
            bar.close()
