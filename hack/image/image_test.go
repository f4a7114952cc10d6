package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// imageDir is an output directory holding freshly built images: bin/image when `make image` left one built from
// the current sources (same inputs key), else a new build into a temporary directory (a few minutes the first
// time arm64 is compiled on a machine, link time only afterwards).
func imageDir(t *testing.T) string {
	t.Helper()
	root := repoRoot()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key, err := inputsKey(ctx, root)
	if err != nil {
		t.Fatalf("inputs key: %v", err)
	}
	cached := filepath.Join(root, "bin", "image")
	if b, err := os.ReadFile(filepath.Join(cached, "inputs.sha256")); err == nil && strings.TrimSpace(string(b)) == key {
		t.Logf("reusing %s (built from the current sources)", cached)
		return cached
	}
	out := t.TempDir()
	start := time.Now()
	if _, err := build(ctx, options{Root: root, Out: out, Registry: "example.com/test", Log: testWriter{t}}); err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Logf("built images in %s", time.Since(start).Round(time.Second))
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestImages loads each OCI layout the way a registry client would and checks what a cluster will run: both
// platforms, the non-root user, the entrypoint, a single file and no shell, the digest file, and that the amd64
// binary taken out of its layer starts (`--help`).
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the images")
	}
	out := imageDir(t)
	for _, name := range []string{"dovetail", "dovetailctl"} {
		t.Run(name, func(t *testing.T) {
			lp, err := layout.FromPath(filepath.Join(out, name))
			if err != nil {
				t.Fatalf("layout: %v", err)
			}
			top, err := lp.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			tm, err := top.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(tm.Manifests) != 1 || !tm.Manifests[0].MediaType.IsIndex() {
				t.Fatalf("index.json should hold one multi-platform index, has %+v", tm.Manifests)
			}
			idx, err := top.ImageIndex(tm.Manifests[0].Digest)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(out, name+".digest"))
			if err != nil {
				t.Fatal(err)
			}
			if got := tm.Manifests[0].Digest.String(); got != strings.TrimSpace(string(want)) {
				t.Errorf("%s.digest says %s, layout holds %s", name, strings.TrimSpace(string(want)), got)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			var plats []string
			for _, d := range im.Manifests {
				if d.Platform == nil {
					t.Fatalf("manifest %s has no platform", d.Digest)
				}
				plats = append(plats, d.Platform.OS+"/"+d.Platform.Architecture)
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				files := checkImage(t, img, name, *d.Platform)
				if d.Platform.Architecture == "amd64" {
					runHelp(t, files["/"+name], name)
				}
			}
			sort.Strings(plats)
			if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, plats); diff != "" {
				t.Errorf("platforms (-want +got):\n%s", diff)
			}
		})
	}
}

// checkImage checks one platform's image and returns its files by path.
func checkImage(t *testing.T, img v1.Image, name string, p v1.Platform) map[string][]byte {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("%s: config says %s/%s", p.Architecture, cf.OS, cf.Architecture)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", p.Architecture, cf.Config.User)
	}
	if diff := cmp.Diff([]string{"/" + name}, cf.Config.Entrypoint); diff != "" {
		t.Errorf("%s: entrypoint (-want +got):\n%s", p.Architecture, diff)
	}
	if len(cf.Config.Cmd) != 0 {
		t.Errorf("%s: cmd %q, want none", p.Architecture, cf.Config.Cmd)
	}
	if !cf.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("%s: created %s, want the epoch (reproducible builds)", p.Architecture, cf.Created.Time)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files["/"+strings.TrimPrefix(h.Name, "/")] = b
			if h.Uid != 0 || h.Gid != 0 || h.Mode != 0o755 {
				t.Errorf("%s: %s owned %d:%d mode %o, want 0:0 755", p.Architecture, h.Name, h.Uid, h.Gid, h.Mode)
			}
		}
		rc.Close()
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// The binary alone: no /bin/sh, no package manager, nothing to exec into.
	if diff := cmp.Diff([]string{"/" + name}, paths); diff != "" {
		t.Errorf("%s: files (-want +got):\n%s", p.Architecture, diff)
	}
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/sh"} {
		if _, ok := files[sh]; ok {
			t.Errorf("%s: image has a shell at %s", p.Architecture, sh)
		}
	}
	return files
}

// runHelp writes the binary out of the layer and runs it with --help.
func runHelp(t *testing.T, binary []byte, name string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Logf("not running the amd64 binary on %s/%s", runtime.GOOS, runtime.GOARCH)
		return
	}
	if len(binary) == 0 {
		t.Fatalf("no /%s in the amd64 image", name)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--help")
	cmd.Env = []string{} // no CLUSTER_NAME, no kubeconfig: --help must not need them
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --help: %v\n%s", name, err, out.String())
	}
	if !strings.Contains(out.String(), "Usage:") {
		t.Errorf("%s --help printed no usage:\n%s", name, out.String())
	}
}

// TestImageReproducible assembles one binary twice and wants one digest: no timestamp or map order leaks into
// the layer or the config. (The binaries themselves are reproducible by go build's own guarantees with
// -trimpath and -buildvcs=false; `make image` twice shows the whole chain.)
func TestImageReproducible(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dovetail")
	if err := os.WriteFile(bin, []byte("#!not-a-real-binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := imageSpec{Name: "dovetail", Repo: "example.com/dovetail"}
	var digests []v1.Hash
	for i := 0; i < 2; i++ {
		img, err := image(bin, spec, platforms[0], "abc123", "0.1.0")
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		if i == 0 {
			// Touch the file: a later mtime must not change the image.
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(bin, later, later); err != nil {
				t.Fatal(err)
			}
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two assemblies of one binary: %s and %s", digests[0], digests[1])
	}
	other, err := image(bin, spec, platforms[0], "def456", "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := other.Digest(); d == digests[0] {
		t.Errorf("another commit gave the same digest %s: the revision label is not in the config", d)
	}
}

// TestChartDefaultsPointAtRelease: the chart's default controller and teardown images are the repositories
// `make image` records for a release, tagged with the chart's appVersion (the tag the builder uses).
func TestChartDefaultsPointAtRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "charts", "dovetail", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Controller struct {
			Image struct{ Repository, Tag, Digest string }
		}
		Teardown struct {
			Image struct{ Repository, Tag string }
		}
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	repos := map[string]string{}
	for _, s := range images(releaseRegistry) {
		repos[s.Name] = s.Repo
	}
	got := map[string]string{"dovetail": values.Controller.Image.Repository, "dovetailctl": values.Teardown.Image.Repository}
	if diff := cmp.Diff(repos, got); diff != "" {
		t.Errorf("chart default repositories differ from the release's (-make image +values.yaml):\n%s", diff)
	}
	// An empty tag and digest mean the chart's appVersion, which is the tag `make image` gives the images.
	if values.Controller.Image.Tag != "" || values.Controller.Image.Digest != "" || values.Teardown.Image.Tag != "" {
		t.Errorf("default tag/digest should be empty (appVersion): %+v %+v", values.Controller.Image, values.Teardown.Image)
	}
	if _, err := appVersion(repoRoot()); err != nil {
		t.Fatal(err)
	}
}
