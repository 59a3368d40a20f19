// Package archtest keeps corral's package graph as docs/architecture.md
// draws it: its tests list every package's imports with `go list` and fail
// on an import the architecture forbids. It holds no code of its own.
package archtest
