"""The RayService workflow: KubeRay's RayService controller for one object, as a durable workflow."""
