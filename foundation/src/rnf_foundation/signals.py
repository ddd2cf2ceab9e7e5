"""Ending long-running commands: SIGTERM (kill, systemd, the runner) ends them as cleanly as Ctrl-C (SIGINT)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

Result = TypeVar("Result")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_until_signal(coroutine: Coroutine[Any, Any, Result]) -> Result | None:
    """Run `coroutine` to its end, or until SIGINT or SIGTERM cancels it (None then).

    Cancelling runs the coroutine's `finally` blocks and `async with` exits, so records are flushed and summaries
    printed the same way whichever signal arrived.
    """

    async def guarded() -> Result | None:
        task = asyncio.ensure_future(coroutine)
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, task.cancel)
        try:
            return await task
        except asyncio.CancelledError:
            return None
        finally:
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)

    return asyncio.run(guarded())
