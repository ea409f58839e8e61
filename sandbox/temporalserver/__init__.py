"""A Temporal server as production runs one, on this machine: `temporal-server` and `temporal-sql-tool` from
the Go module pinned in temporal/ (`make temporal-server`, temporal/build.sh), on a private PostgreSQL cluster
from Debian's packages (persistence and advanced visibility both on PostgreSQL, the `postgres12` plugin), all
four services in one process, everything on 127.0.0.1 at free ports and stopped by PID.

`temporal_on_postgres(directory, search_attributes=...)` starts it with the `default` namespace and the
given Keyword search attributes registered (raypilot's are in workflows/search_attributes.py, which sandbox
does not import); `temporal_on_postgres_unavailable()` says why it cannot start here (None when it can).
"""

from sandbox.temporalserver.build import TemporalBuild, TemporalNotBuiltError, temporal_build
from sandbox.temporalserver.server import (
    TemporalOnPostgres,
    temporal_on_postgres,
    temporal_on_postgres_unavailable,
)

__all__ = [
    "TemporalBuild",
    "TemporalNotBuiltError",
    "TemporalOnPostgres",
    "temporal_build",
    "temporal_on_postgres",
    "temporal_on_postgres_unavailable",
]
