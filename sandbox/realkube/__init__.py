"""The real Kubernetes control plane for the sandbox: etcd, kube-apiserver, kube-controller-manager and
KubeRay's operator, built by `make kube` (kube/build.sh) and run as local processes."""
