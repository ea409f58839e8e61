"""What ends a client call to raypilot's workflows, and the exit statuses of `raypilot` (docs/contract.md §6)
that a command turns it into."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # any other failure: Temporal or Kubernetes unreachable, workflow unknown or failed
EXIT_REJECTED = 2  # rejected input (a manifest, a KIND/NAMESPACE/NAME, a control that does not apply now)


class CommandError(Exception):
    """Ends a command: `message` goes to stderr, `exit_code` is the process's exit status."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def rejected(message: str) -> CommandError:
    return CommandError(message, EXIT_REJECTED)
