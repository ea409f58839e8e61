"""What workflows and activities exchange: activity names and declarations, inputs, results and wait views.

Pure (dataclasses and functions over JSON; no I/O library), importing only `models`, so that both
`workflows/` and `activities/` depend on it and neither on the other.
"""
