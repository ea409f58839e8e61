"""The RayJob workflow: KubeRay's RayJob controller for one object, as a durable workflow."""
