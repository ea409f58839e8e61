//go:build tools

// Package tools keeps the Temporal server's and its SQL schema tool's packages main in go.mod and go.sum
// (build.sh builds them).
package tools

import (
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
