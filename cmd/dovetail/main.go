// Command dovetail is the Dovetail controller: it parses settings (flags with Karpenter's environment variable
// fallbacks) and runs the controller manager until SIGTERM.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/go-logr/logr"
	// CA roots compiled in: the image has no /etc/ssl, and TLS to AWS must still verify.
	_ "golang.org/x/crypto/x509roots/fallback"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dovetail/dovetail/pkg/operator"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/version"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "version") {
		fmt.Println(version.Commit())
		return
	}
	s, err := settings.Parse(os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(os.Stdout)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "dovetail: invalid settings: %v\n", err)
		os.Exit(1)
	}
	outputs, err := operator.OpenLogOutputs(s.LogOutputPaths, s.LogErrorOutputPaths)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dovetail: invalid settings: %v\n", err)
		os.Exit(1)
	}
	defer outputs.Close()
	logger := operator.NewLoggerTo(s.LogLevel, outputs)
	operator.SetGlobalLoggers(logger)
	logger.Info("dovetail build", "commit", version.Commit())
	logSettingsWarnings(logger, s)
	if soft, set := operator.SoftMemoryLimit(s.MemoryLimit, os.Getenv); set {
		debug.SetMemoryLimit(soft)
		logger.Info("go runtime soft memory limit set from the container's", "memory-limit-bytes", s.MemoryLimit, "soft-limit-bytes", soft)
	}
	if percent, set := operator.DefaultGCPercent(os.Getenv); set {
		logger.Info("go runtime garbage collection target set", "gogc", percent, "was", debug.SetGCPercent(percent))
	}
	if procs, set := operator.ProcsFromCPURequests(s.CPURequests, runtime.GOMAXPROCS(0), os.Getenv); set {
		logger.Info("GOMAXPROCS sized from the container's CPU request", "cpu-requests-millicores", s.CPURequests, "gomaxprocs", procs, "was", runtime.GOMAXPROCS(procs))
	}
	if err := operator.Run(ctrl.SetupSignalHandler(), s, operator.Options{Getenv: os.Getenv, Logger: logger}); err != nil {
		fmt.Fprintf(os.Stderr, "dovetail: %v\n", err)
		outputs.Close()
		os.Exit(1)
	}
}

// logSettingsWarnings logs, once at start, what the settings parser found worth saying that is not an error
// (e.g. a feature gate Karpenter removed, which does nothing).
func logSettingsWarnings(logger logr.Logger, s *settings.Settings) {
	for _, w := range s.Warnings {
		logger.Info("settings warning", "warning", w)
	}
}

// usage prints every setting: its flag, the environment variable read when the flag is absent, and the default.
func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: dovetail [flags]\n       dovetail --version")
	fmt.Fprintln(w, "\nThe Dovetail controller. Each flag falls back to its environment variable, then to its default")
	fmt.Fprintln(w, "(docs/settings.md).\n\nFlags:")
	for _, o := range settings.Options() {
		def := ""
		if o.Default != "" {
			def = fmt.Sprintf(" (default %q)", o.Default)
		}
		fmt.Fprintf(w, "  --%s  [$%s]%s\n      %s\n", o.Flag, o.Env, def, o.Usage)
	}
}
