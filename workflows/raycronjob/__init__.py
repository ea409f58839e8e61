"""RayCronJobTick: the workflow a RayCronJob's Temporal Schedule starts on each tick."""
