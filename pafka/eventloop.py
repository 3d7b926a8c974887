"""Which event loop a service runs on: uvloop when it is installed, else asyncio's own.

uvloop's transports and scheduling cost a good part less CPU per exchange than asyncio's
selector loop, which matters to services whose work is many small network exchanges (the
broker's Kafka connections, the gateway's HTTP and Kafka traffic).
"""

from __future__ import annotations

import asyncio


def use_uvloop() -> bool:
    """Make uvloop the loop policy when it is importable; True when it now is."""
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True
