//go:build tools

// Package tools keeps etcd's package main in go.mod and go.sum (build.sh builds it).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
