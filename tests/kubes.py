"""The two Kubernetes APIs a `kube_stack` fixture runs a test module on: the sandbox's own, and the real stack
(etcd, kube-apiserver, kube-controller-manager, kube-proxy, KubeRay's operator, the node agent)."""

KUBES = ("sandbox", "real")
