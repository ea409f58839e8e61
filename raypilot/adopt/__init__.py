"""Taking over what KubeRay left after `kubectl delete rayservice.ray.io/NAME --cascade=orphan`."""
