"""Where `make temporal-server` (temporal/build.sh) put the Temporal server, its SQL tool and its schemas."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.go_cache import cached_build_dir

BUILD_SCRIPT = Path(__file__).parents[2] / "temporal" / "build.sh"
# Set to a directory temporal/build.sh printed to skip asking the script (e.g. a cache built elsewhere).
TEMPORAL_DIR_ENV = "RAYPILOT_TEMPORAL_DIR"


class TemporalNotBuiltError(RuntimeError):
    """The cache temporal/build.sh fills is incomplete (or the script failed); the message says which."""


@dataclass(frozen=True)
class TemporalBuild:
    directory: Path

    @property
    def server(self) -> Path:
        return self.directory / "bin" / "temporal-server"

    @property
    def sql_tool(self) -> Path:
        return self.directory / "bin" / "temporal-sql-tool"

    def versioned_schema(self, database: str) -> Path:
        """The versioned PostgreSQL schema of `temporal` or `visibility` that `update-schema -d` applies."""
        return self.directory / "schema" / "postgresql" / "v12" / database / "versioned"


def temporal_build(*, build: bool = False, show_progress: bool = False) -> TemporalBuild:
    """$RAYPILOT_TEMPORAL_DIR, else what temporal/build.sh prints: at once when its cache is complete;
    otherwise it builds (minutes, progress on our stderr if asked) or, with `build=False`, raises."""
    return TemporalBuild(
        cached_build_dir(
            BUILD_SCRIPT, TEMPORAL_DIR_ENV, TemporalNotBuiltError, build=build, show_progress=show_progress
        )
    )
