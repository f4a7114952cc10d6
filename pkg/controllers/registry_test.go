package controllers_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/controllers"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/settings"
)

// TestEveryControllerIsRegistered fails when a package under pkg/controllers has a controller (a NewController
// function and a Name constant) that controllers.New leaves out: such a controller is tested on its own in
// envtest but never runs in the operator.
func TestEveryControllerIsRegistered(t *testing.T) {
	var want []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name, hasConstructor, err := controllerPackage(path)
		if err != nil {
			return err
		}
		switch {
		case hasConstructor && name == "":
			t.Errorf("package %s has NewController but no Name constant", path)
		case hasConstructor:
			want = append(want, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	// Every implemented feature gate on, so that controllers behind a gate are registered too.
	var gates []string
	for _, g := range settings.FeatureGates() {
		if g.Implemented {
			gates = append(gates, g.Name+"=true")
		}
	}
	s, err := settings.Parse([]string{"--cluster-name=test", "--feature-gates=" + strings.Join(gates, ",")}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range controllers.New(deps.Deps{Settings: s}) {
		got = append(got, c.Name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controllers.New does not match the controller packages (-packages +registered):\n%s", diff)
	}
}

// controllerPackage reads the non-test Go files of dir and returns its Name constant and whether it declares a
// NewController function.
func controllerPackage(dir string) (name string, hasConstructor bool, err error) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return "", false, err
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "NewController" {
						hasConstructor = true
					}
				case *ast.GenDecl:
					if d.Tok != token.CONST {
						continue
					}
					for _, spec := range d.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, id := range vs.Names {
							if id.Name != "Name" || i >= len(vs.Values) {
								continue
							}
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								if name, err = strconv.Unquote(lit.Value); err != nil {
									return "", false, err
								}
							}
						}
					}
				}
			}
		}
	}
	return name, hasConstructor, nil
}

// TestGatedControllersOffByDefault: with the default feature gates, the node repair controller does not run.
func TestGatedControllersOffByDefault(t *testing.T) {
	s, err := settings.Parse([]string{"--cluster-name=test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range controllers.New(deps.Deps{Settings: s}) {
		if c.Name == "node.health" {
			t.Errorf("controller %s registered with NodeRepair off", c.Name)
		}
	}
}
