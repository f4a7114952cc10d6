package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogOutputPaths: LOG_OUTPUT_PATHS sends the log lines to every path given; a path that cannot be opened is an
// error naming the setting.
func TestLogOutputPaths(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	o, err := OpenLogOutputs([]string{a, b}, []string{"stderr"})
	if err != nil {
		t.Fatal(err)
	}
	logger := NewLoggerTo("info", o)
	logger.Info("hello", "key", "value")
	logger.V(1).Info("debug line")
	o.Close()
	for _, p := range []string{a, b} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), `"msg":"hello"`) || !strings.Contains(string(got), `"key":"value"`) {
			t.Errorf("%s: %q has no hello line", p, got)
		}
		if strings.Contains(string(got), "debug line") {
			t.Errorf("%s: a debug line at level info: %q", p, got)
		}
	}

	_, err = OpenLogOutputs([]string{filepath.Join(dir, "missing", "dir", "x.log")}, []string{"stderr"})
	if err == nil || !strings.HasPrefix(err.Error(), "LOG_OUTPUT_PATHS (--log-output-paths) ") {
		t.Errorf("unopenable output path: err %v, want one naming LOG_OUTPUT_PATHS", err)
	}
	_, err = OpenLogOutputs([]string{"stdout"}, []string{filepath.Join(dir, "missing", "dir", "x.log")})
	if err == nil || !strings.HasPrefix(err.Error(), "LOG_ERROR_OUTPUT_PATHS (--log-error-output-paths) ") {
		t.Errorf("unopenable error output path: err %v, want one naming LOG_ERROR_OUTPUT_PATHS", err)
	}
}
