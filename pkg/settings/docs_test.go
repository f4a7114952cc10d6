package settings

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDocsListEverySetting keeps docs/settings.md in step with Options.
func TestDocsListEverySetting(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "settings.md"))
	if err != nil {
		t.Fatalf("reading docs/settings.md: %v", err)
	}
	doc := string(b)
	for _, o := range Options() {
		row := "| `" + o.Env + "` | `--" + o.Flag + "` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/settings.md has no row starting %q", row)
		}
		if o.Default != "" && !strings.Contains(doc, "`"+o.Default+"`") {
			t.Errorf("docs/settings.md does not state the default %q of %s", o.Default, o.Env)
		}
	}
}
