// Command dovetailctl is Dovetail's command-line tool: offline simulation, explanations, setup checks and
// teardown. Installed as kubectl-dovetail it is also a kubectl plugin (`kubectl dovetail ...`).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	// CA roots compiled in: the image has no /etc/ssl, and explain/teardown/doctor call AWS over TLS.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/dovetail/dovetail/pkg/cli/clidoc"
	"github.com/dovetail/dovetail/pkg/cli/doctor"
	"github.com/dovetail/dovetail/pkg/cli/explain"
	"github.com/dovetail/dovetail/pkg/cli/simulate"
	"github.com/dovetail/dovetail/pkg/cli/teardown"
	"github.com/dovetail/dovetail/pkg/version"
)

func main() {
	root := &cobra.Command{
		Use:           "dovetailctl",
		Short:         "Dovetail's command-line tool",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Commit(),
	}
	// Subcommands: one line each, from pkg/cli/<name>.NewCommand().
	root.AddCommand(simulate.NewCommand())
	root.AddCommand(explain.NewCommand())
	root.AddCommand(teardown.NewCommand())
	root.AddCommand(doctor.NewCommand())
	// Hidden: writes docs/reference/cli/dovetailctl*.md (hack/generate.sh).
	root.AddCommand(clidoc.NewCommand())
	// As a kubectl plugin (kubectl-dovetail on PATH) help speaks of `kubectl dovetail`; the command's name, which
	// completion scripts register, stays dovetailctl.
	if filepath.Base(os.Args[0]) == "kubectl-dovetail" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl dovetail"}
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "dovetailctl:", err)
		os.Exit(1)
	}
}
