"""Reading the operator configuration: environment variables and feature gates of the worker process.

Workflows run this once (as a local activity) so the value they act on is recorded in history and a replay on
another worker with other settings still takes the same decisions.
"""

from __future__ import annotations

import os

from models.operator import OperatorConfig, operator_config_from_env
from wire import stubs
from wire.stubs.common import implements


@implements(stubs.read_operator_config)
def read_operator_config() -> OperatorConfig:
    return operator_config_from_env(os.environ)
