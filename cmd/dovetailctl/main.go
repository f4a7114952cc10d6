// Command dovetailctl is Dovetail's command-line tool: offline simulation, explanations and teardown.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "dovetailctl",
		Short:         "Dovetail's command-line tool",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Subcommands: one line each, from pkg/cli/<name>.NewCommand().
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dovetailctl:", err)
		os.Exit(1)
	}
}
