package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDocsListEverySetting: the generated docs/reference/settings.md (hack/docgen) is in step with Options.
func TestDocsListEverySetting(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "reference", "settings.md"))
	if err != nil {
		t.Fatalf("reading docs/reference/settings.md: %v", err)
	}
	doc := string(b)
	for _, o := range Options() {
		row := "| `" + o.Env + "` | `--" + o.Flag + "` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/reference/settings.md has no row starting %q", row)
		}
		if o.Default != "" && !strings.Contains(doc, "`"+o.Default+"`") {
			t.Errorf("docs/reference/settings.md does not state the default %q of %s", o.Default, o.Env)
		}
	}
}

// TestDocsListEveryFeatureGate: the feature-gate table of docs/reference/settings.md has a row for each gate.
func TestDocsListEveryFeatureGate(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "reference", "settings.md"))
	if err != nil {
		t.Fatalf("reading docs/reference/settings.md: %v", err)
	}
	for _, g := range append(FeatureGates(), AWSFeatureGates()...) {
		row := "| `" + g.Name + "` | `" + strconv.FormatBool(g.Default) + "` | `" + strconv.FormatBool(g.KarpenterDefault) + "` | " + g.Since + " | "
		if !strings.Contains(string(b), row) {
			t.Errorf("docs/reference/settings.md has no feature-gate row starting %q", row)
		}
		if !g.Implemented && !strings.Contains(string(b), row+"not implemented yet") {
			t.Errorf("docs/reference/settings.md does not say gate %s is not implemented yet", g.Name)
		}
	}
}

// TestDocsListEveryRemovedFeatureGate: each gate Karpenter removed has a row in docs/reference/settings.md.
func TestDocsListEveryRemovedFeatureGate(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "reference", "settings.md"))
	if err != nil {
		t.Fatalf("reading docs/reference/settings.md: %v", err)
	}
	for _, g := range RemovedFeatureGates() {
		if !strings.Contains(string(b), "| `"+g.Name+"` | v") {
			t.Errorf("docs/reference/settings.md has no removed-gate row for %s", g.Name)
		}
	}
}
