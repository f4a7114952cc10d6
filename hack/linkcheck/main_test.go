package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Getting started", "getting-started"},
		{"Stress: the unit suite under CPU load", "stress-the-unit-suite-under-cpu-load"},
		{"Running beside Karpenter: the leader lease", "running-beside-karpenter-the-leader-lease"},
		{"`FEATURE_GATES` and gates", "feature_gates-and-gates"},
		{"Disruption controller (parallel commands, check before draining)", "disruption-controller-parallel-commands-check-before-draining"},
		{"[Linked](x.md) heading", "linked-heading"},
		{"Déjà vu", "déjà-vu"},
		{"a -- b", "a----b"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func write(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	root := t.TempDir()
	write(t, root, "Makefile", "GO ?= go\n.PHONY: demo\ndemo: build ## Demo.\n\t@bash hack/demo.sh\nbuild test-e2e:\n\tgo build\n")
	write(t, root, "README.md", "# Title\n\n"+
		"[ok](docs/a.md) [ok anchor](docs/a.md#second-part) [self](#title) [web](https://example.com/x)\n"+
		"[missing](docs/nope.md) [bad anchor](docs/a.md#nope)\n"+
		"Run `make demo`, `make test-e2e` or `FOO=1 make build`; `make missing-target` is wrong.\n"+
		"Prose may say make the point without a check.\n"+
		"```sh\nmake demo\nmake absent\n# [not a link](nowhere.md)\n```\n"+
		"`[code](nowhere.md)` is not a link.\n"+
		"[ref]: docs/gone.md\n")
	write(t, root, "docs/a.md", "# A\n\n## Second part\n\n## Dup\n\n## Dup\n\n[up](../README.md#title) [dup](#dup-1) [dup2](#dup-2) [img](img/x.svg)\n")
	problems, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		`README.md:4: link "docs/nope.md": docs/nope.md does not exist`,
		`README.md:4: link "docs/a.md#nope": docs/a.md has no heading #nope`,
		`README.md:5: make target "missing-target" is not in the Makefile`,
		`README.md:9: make target "absent" is not in the Makefile`,
		`README.md:13: link "docs/gone.md": docs/gone.md does not exist`,
		`docs/a.md:9: link "#dup-2": docs/a.md has no heading #dup-2`,
		`docs/a.md:9: link "img/x.svg": docs/img/x.svg does not exist`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// TestRepository: the repository's own documentation has no broken link.
func TestRepository(t *testing.T) {
	problems, err := Check(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
