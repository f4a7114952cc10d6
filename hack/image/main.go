// Command image builds Dovetail's container images without Docker: static binaries cross-compiled with `go
// build`, each put alone in one layer on an empty base, for linux/amd64 and linux/arm64, written as OCI image
// layouts under bin/image/. `make image` runs it.
//
// The result is reproducible: the binaries are built with -trimpath and without VCS stamping (the commit is
// passed with -ldflags), the layer's one entry has fixed owner, mode and time, and the config's timestamps are
// the Unix epoch, so two builds of one commit have one digest.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// nonRoot is the user and group the images run as (distroless' "nonroot"); the chart's securityContext uses it.
const nonRoot = "65532:65532"

// builderRevision changes when the way images are assembled changes, so a cached bin/image is rebuilt.
const builderRevision = "1"

// imageSpec is one image: the command it holds and the repository a release publishes it to.
type imageSpec struct {
	Name string // binary and layout directory name: cmd/<Name>, /<Name>, bin/image/<Name>
	Repo string
}

// releaseRegistry is where a release publishes the images; the chart's default image repositories point there
// (TestChartDefaultsPointAtRelease).
const releaseRegistry = "ghcr.io/dovetail"

// images are the images `make image` builds. The repositories match the chart's defaults.
func images(registry string) []imageSpec {
	return []imageSpec{
		{Name: "dovetail", Repo: registry + "/dovetail"},
		{Name: "dovetailctl", Repo: registry + "/dovetailctl"},
	}
}

// platforms are the architectures every image is built for.
var platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// options are the builder's inputs.
type options struct {
	Root     string // repository root
	Out      string // output directory (bin/image)
	Registry string // where a release publishes the images
	Log      io.Writer
}

// result is one built image.
type result struct {
	Name   string
	Layout string  // OCI layout directory
	Digest v1.Hash // digest of the multi-platform index
	Ref    string  // repository:tag@digest a release would publish
}

func main() {
	var o options
	flag.StringVar(&o.Root, "root", ".", "repository root")
	flag.StringVar(&o.Out, "out", "bin/image", "output directory of the OCI layouts")
	flag.StringVar(&o.Registry, "registry", releaseRegistry, "registry and namespace a release publishes to (only printed and recorded)")
	flag.Parse()
	o.Log = os.Stderr
	res, err := build(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	for _, r := range res {
		fmt.Printf("%s\toci-layout:%s\t%s\n", r.Name, r.Layout, r.Ref)
	}
}

// build compiles the binaries for every platform and writes one OCI layout per image under o.Out, with a
// <name>.digest file beside it and an inputs.sha256 file recording what it was built from.
func build(ctx context.Context, o options) ([]result, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	out := o.Out
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	commit, err := gitCommit(ctx, root)
	if err != nil {
		return nil, err
	}
	tag, err := appVersion(root)
	if err != nil {
		return nil, err
	}
	key, err := inputsKey(ctx, root)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "dovetail-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	specs := images(o.Registry)
	var pkgs []string
	for _, s := range specs {
		pkgs = append(pkgs, "./cmd/"+s.Name)
	}
	// binaries[platform][name] is the path of one compiled binary.
	binaries := map[string]map[string]string{}
	for _, p := range platforms {
		dir := filepath.Join(work, p.OS+"-"+p.Architecture)
		if err := goBuild(ctx, root, dir, p, commit, pkgs, o.Log); err != nil {
			return nil, err
		}
		binaries[p.Architecture] = map[string]string{}
		for _, s := range specs {
			binaries[p.Architecture][s.Name] = filepath.Join(dir, s.Name)
		}
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var res []result
	for _, s := range specs {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, p := range platforms {
			img, err := image(binaries[p.Architecture][s.Name], s, p, commit, tag)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", s.Name, p.Architecture, err)
			}
			pl := p
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pl}})
		}
		digest, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(out, s.Name)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		lp, err := layout.Write(dir, empty.Index)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		// One entry in index.json, the multi-platform index, so `crane push <dir> <ref>` pushes it whole.
		if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": tag,
		})); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		if err := os.WriteFile(filepath.Join(out, s.Name+".digest"), []byte(digest.String()+"\n"), 0o644); err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = dir
		}
		res = append(res, result{Name: s.Name, Layout: rel, Digest: digest, Ref: fmt.Sprintf("%s:%s@%s", s.Repo, tag, digest)})
	}
	if err := os.WriteFile(filepath.Join(out, "inputs.sha256"), []byte(key+"\n"), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}

// goBuild compiles pkgs for one platform into dir: static (CGO off), -trimpath, no VCS stamp (the commit goes in
// with -X), symbols stripped, and the micro-architecture level pinned so the environment cannot change the bytes.
func goBuild(ctx context.Context, root, dir string, p v1.Platform, commit string, pkgs []string, log io.Writer) error {
	args := []string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X github.com/dovetail/dovetail/pkg/version.commit=" + commit,
		"-o", dir + string(filepath.Separator)}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", p.OS, p.Architecture, err)
	}
	fmt.Fprintf(log, "image: built %s for %s/%s in %s\n", strings.Join(pkgs, " "), p.OS, p.Architecture, time.Since(start).Round(time.Second))
	return nil
}

// image puts one binary at /<name> in a single layer on an empty base and sets the entrypoint, user and labels.
func image(binary string, s imageSpec, p v1.Platform, commit, tag string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := singleFileTar(s.Name, data)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "hack/image: /" + s.Name, Created: v1.Time{Time: time.Unix(0, 0).UTC()}},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + s.Name},
		User:       nonRoot,
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":   "https://github.com/dovetail/dovetail",
			"org.opencontainers.image.revision": commit,
			"org.opencontainers.image.version":  tag,
			"org.opencontainers.image.title":    s.Name,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// singleFileTar is a tar stream holding one executable at the root, owned by root, with a fixed time.
func singleFileTar(name string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(data)),
		ModTime: time.Unix(0, 0).UTC(), Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gitCommit is HEAD's commit, with "-dirty" when tracked files differ from it.
func gitCommit(ctx context.Context, root string) (string, error) {
	head, err := git(ctx, root, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	c := strings.TrimSpace(string(head))
	status, err := git(ctx, root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(status)) > 0 {
		c += "-dirty"
	}
	return c, nil
}

// inputsKey hashes what the images are built from: HEAD, the diff of tracked files against it, untracked files
// (names and contents), the Go version and the builder's revision. The image test reuses bin/image when the key
// it recorded still matches.
func inputsKey(ctx context.Context, root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "builder %s\n", builderRevision)
	goVersion, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h.Write(goVersion)
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"diff", "HEAD", "--binary"}} {
		b, err := git(ctx, root, args...)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	untracked, err := git(ctx, root, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return "", err
	}
	names := strings.Split(strings.TrimRight(string(untracked), "\x00"), "\x00")
	sort.Strings(names)
	for _, n := range names {
		if n == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, n))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func git(ctx context.Context, root string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// appVersion is the chart's appVersion, the tag a release publishes the images under.
func appVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "charts", "dovetail", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("Chart.yaml: %w", err)
	}
	if c.AppVersion == "" {
		return "", errors.New("Chart.yaml has no appVersion")
	}
	return c.AppVersion, nil
}
