"""Test helpers for raypilot and for users who test their own policies against raypilot's workflows.

Installed as the pytest plugin `raypilot` (see `raypilot.testing.plugin`): fixtures `time_skipping_env`,
`dev_server_env`, `fake_worker`; plus `running_worker` and the replay helpers in `raypilot.testing.replay`.
"""
