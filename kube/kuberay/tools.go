//go:build tools

// Package tools keeps KubeRay's operator (package main at its module root) and the Gateway API module
// in go.mod and go.sum (build.sh builds the one and copies the other's CRDs).
package tools

import (
	_ "github.com/ray-project/kuberay/ray-operator"
	_ "sigs.k8s.io/gateway-api/apis/v1"
)
