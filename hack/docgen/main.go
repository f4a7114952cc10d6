// Command docgen writes the generated reference pages of docs/reference from the code: the controller's settings
// (pkg/settings) and the Helm chart's values (charts/dovetail/values.yaml). The CLI pages come from the binaries
// themselves (`dovetailctl gen-docs`, `awssim gen-docs`). `make generate` runs it through hack/generate.sh; `make
// verify` fails when the committed pages differ from its output.
//
//	go run ./hack/docgen -root .
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	out := filepath.Join(root, "docs", "reference")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	var settings bytes.Buffer
	if err := writeSettings(&settings); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "settings.md"), settings.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing settings reference: %w", err)
	}
	values, err := os.ReadFile(filepath.Join(root, "charts", "dovetail", "values.yaml"))
	if err != nil {
		return fmt.Errorf("reading the chart's values: %w", err)
	}
	var helm bytes.Buffer
	if err := writeHelmValues(&helm, values); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "helm-values.md"), helm.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing Helm values reference: %w", err)
	}
	return nil
}
