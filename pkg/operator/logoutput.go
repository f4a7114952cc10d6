package operator

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LogOutputs are the opened destinations of LOG_OUTPUT_PATHS and LOG_ERROR_OUTPUT_PATHS.
type LogOutputs struct {
	// Out receives the log lines; Err the logger's own errors (a line it could not write).
	Out, Err zapcore.WriteSyncer
	// Close closes the files opened (not stdout or stderr).
	Close func()
}

// OpenLogOutputs opens the log destinations: "stdout", "stderr" or file paths (appended to, created when
// missing), as Karpenter's logger takes them. The error names the setting whose path could not be opened.
func OpenLogOutputs(outputPaths, errorOutputPaths []string) (LogOutputs, error) {
	out, closeOut, err := uberzap.Open(outputPaths...)
	if err != nil {
		return LogOutputs{}, fmt.Errorf("LOG_OUTPUT_PATHS (--log-output-paths) %s: %w", strings.Join(outputPaths, ","), err)
	}
	errOut, closeErr, err := uberzap.Open(errorOutputPaths...)
	if err != nil {
		closeOut()
		return LogOutputs{}, fmt.Errorf("LOG_ERROR_OUTPUT_PATHS (--log-error-output-paths) %s: %w", strings.Join(errorOutputPaths, ","), err)
	}
	return LogOutputs{Out: out, Err: errOut, Close: func() { closeOut(); closeErr() }}, nil
}

// NewLoggerTo returns the JSON logger at level writing to o.Out, with the logger's own errors going to o.Err, its
// values applied when a line is written (DeferValues).
func NewLoggerTo(level string, o LogOutputs) logr.Logger {
	return DeferValues(zap.New(zap.Level(zapLevel(level)), zap.WriteTo(o.Out), zap.RawZapOpts(uberzap.ErrorOutput(o.Err))))
}
