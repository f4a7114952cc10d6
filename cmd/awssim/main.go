// Command awssim runs the local AWS simulator (serve) and talks to its admin API (fault, sqs, instances,
// terminate, state, reservation, ami).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "awssim:", err)
		os.Exit(1)
	}
}
