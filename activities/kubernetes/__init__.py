"""Activities and clients for the Kubernetes API: RayClusters and Services (clusters.py), the submitter Job
and Pods (workloads.py), Events and cleanup (events.py), the namespace observer (observer.py, with its cache),
and the REST plumbing they share (client.py, async_api.py, resources.py)."""
