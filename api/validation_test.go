package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/test"
)

// kube is the API server client shared by the tests of this package. TestMain owns the server; tests only
// create objects with names unique to the case.
var kube client.Client

func TestMain(m *testing.M) {
	code, err := runWithEnv(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "api validation tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithEnv(m *testing.M) (int, error) {
	root := repoRoot()
	bin, err := controlPlaneBin(root)
	if err != nil {
		return 0, err
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return 0, fmt.Errorf("missing %s in %s (KUBEBUILDER_ASSETS or hack/build-control-plane.sh): %w", b, bin, err)
		}
	}
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, karpv1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return 0, fmt.Errorf("building scheme: %w", err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: test.ControlPlaneStartTimeout(),
	}
	cfg, err := env.Start()
	if err != nil {
		return 0, fmt.Errorf("starting kube-apiserver with the CRDs of config/crd: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping envtest:", err)
		}
	}()
	kube, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return 0, fmt.Errorf("creating client: %w", err)
	}
	return m.Run(), nil
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// controlPlaneBin returns $KUBEBUILDER_ASSETS or the folder hack/build-control-plane.sh prints (it waits for a
// running build to finish).
func controlPlaneBin(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-control-plane.sh"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("KUBEBUILDER_ASSETS is unset and hack/build-control-plane.sh failed: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(out.String()), nil
}

// validationCase is one manifest applied to the API server. The object is base with patch merged into it
// (JSON merge patch semantics: maps merge, lists and scalars replace, null deletes). If update is set, the
// object is created for real and then updated with update merged into it; want applies to the update.
type validationCase struct {
	name   string
	base   string
	patch  string
	update string
	// want is "" for an accepted manifest, else a substring of the rejection message.
	want string
}

func runCases(t *testing.T, cases []validationCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			obj := manifest(t, tc.base, tc.patch)
			obj.SetName(objectName(t.Name()))
			var err error
			if tc.update == "" {
				err = kube.Create(ctx, obj, client.DryRunAll)
			} else {
				if err := kube.Create(ctx, obj); err != nil {
					t.Fatalf("creating the object to update: %v", err)
				}
				t.Cleanup(func() { _ = kube.Delete(context.Background(), obj) })
				updated := manifest(t, toYAML(t, obj.Object), tc.update)
				err = kube.Update(ctx, updated)
			}
			checkResult(t, err, tc.want)
		})
	}
}

func checkResult(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("want accepted, got rejected: %v", err)
	case want != "" && err == nil:
		t.Fatalf("want rejected with %q, got accepted", want)
	case want != "" && !apierrors.IsInvalid(err):
		t.Fatalf("want an Invalid error containing %q, got %v", want, err)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("rejection message does not contain %q:\n%v", want, err)
	}
}

// manifest parses base, merges patch into it and returns the object.
func manifest(t *testing.T, base, patch string) *unstructured.Unstructured {
	t.Helper()
	var obj map[string]interface{}
	if err := yaml.Unmarshal([]byte(base), &obj); err != nil {
		t.Fatalf("parsing base manifest: %v", err)
	}
	if patch != "" {
		var p map[string]interface{}
		if err := yaml.Unmarshal([]byte(patch), &p); err != nil {
			t.Fatalf("parsing patch: %v", err)
		}
		obj = mergePatch(obj, p)
	}
	return &unstructured.Unstructured{Object: obj}
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(target, patch map[string]interface{}) map[string]interface{} {
	if target == nil {
		target = map[string]interface{}{}
	}
	for k, pv := range patch {
		if pv == nil {
			delete(target, k)
			continue
		}
		pm, ok := pv.(map[string]interface{})
		if !ok {
			target[k] = pv
			continue
		}
		tm, _ := target[k].(map[string]interface{})
		target[k] = mergePatch(tm, pm)
	}
	return target
}

func toYAML(t *testing.T, obj map[string]interface{}) string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding object: %v", err)
	}
	return string(b)
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// objectName turns a test name into a valid, unique object name.
func objectName(testName string) string {
	n := strings.Trim(nonName.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(n) > 63 {
		n = fmt.Sprintf("%s-%x", n[:50], fnv(testName))
	}
	return n
}

func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// countCases reports how many accepted and rejected cases a table holds; TestCaseCounts uses it.
func countCases(cases []validationCase) (accepted, rejected int) {
	for _, c := range cases {
		if c.want == "" {
			accepted++
		} else {
			rejected++
		}
	}
	return accepted, rejected
}
