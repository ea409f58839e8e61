"""`raypilot controller`: drives raypilot.io RayJob and RayService objects through their workflows."""
