"""What a RayCronJob decides: its Temporal Schedule, each tick's RayJob, which finished RayJobs go (pure)."""
