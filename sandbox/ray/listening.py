"""How the sandbox's Ray HTTP servers (the simulated dashboard, its Serve proxy and metrics port, the real
head's front, the simulated Ray image's agent) listen on a TCP port."""

from __future__ import annotations

from aiohttp import web


async def serve_app(app: web.Application, host: str, port: int) -> web.AppRunner:
    """`app` listening on `host`:`port` (address reuse on, no access log, signals left to the process) until
    the returned runner is cleaned up. A port that cannot be bound raises, with the runner cleaned up."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, reuse_address=True).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner
