// Command corral runs a corral peer (agent), a local development cluster
// (dev), and the operator CLI. It is the only place where corral's
// packages are wired together; nothing imports it.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(exitCode(err))
	}
}
