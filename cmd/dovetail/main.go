// Command dovetail is the Dovetail controller: it parses settings (flags with Karpenter's environment variable
// fallbacks) and runs the controller manager until SIGTERM.
package main

import (
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dovetail/dovetail/pkg/operator"
	"github.com/dovetail/dovetail/pkg/settings"
)

func main() {
	s, err := settings.Parse(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dovetail: invalid settings: %v\n", err)
		os.Exit(1)
	}
	logger := operator.NewLogger(s.LogLevel, os.Stderr)
	operator.SetGlobalLoggers(logger)
	if err := operator.Run(ctrl.SetupSignalHandler(), s, operator.Options{Getenv: os.Getenv, Logger: logger}); err != nil {
		fmt.Fprintf(os.Stderr, "dovetail: %v\n", err)
		os.Exit(1)
	}
}
