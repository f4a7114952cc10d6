package main

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/dovetail/dovetail/pkg/settings"
)

// TestSettingsWarningsLogged: a removed feature gate starts the controller, and its warning is logged once.
func TestSettingsWarningsLogged(t *testing.T) {
	s, err := settings.Parse([]string{"--feature-gates=Drift=false"}, func(k string) string {
		return map[string]string{"CLUSTER_NAME": "demo"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	logSettingsWarnings(logger, s)
	if len(lines) != 1 || !strings.Contains(lines[0], "feature gate Drift does nothing: ") {
		t.Errorf("logged %q, want one line with the Drift warning", lines)
	}
}
