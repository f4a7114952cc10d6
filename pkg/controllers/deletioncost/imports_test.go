package deletioncost

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoOtherController keeps the controller on its own: what it shares with the disruption controller
// lives in pkg/controllers/internal, and the dependencies of every controller in pkg/controllers/deps.
func TestImportsNoOtherController(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	const controllers = "github.com/dovetail/dovetail/pkg/controllers/"
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(path, controllers)
			if ok && rest != "deps" && !strings.HasPrefix(rest, "internal/") {
				t.Errorf("%s imports the controller package %s", f, path)
			}
		}
	}
}
