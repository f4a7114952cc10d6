package test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
)

// RepoRoot returns the repository's root folder, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// ControlPlaneBin returns the folder with the locally built etcd and kube-apiserver: $KUBEBUILDER_ASSETS when set,
// otherwise what hack/build-control-plane.sh reports (building them once if needed).
func ControlPlaneBin() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "build-control-plane.sh"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", &EnvError{Msg: "building the control plane binaries failed: " + err.Error() + ": " + errOut.String()}
	}
	return strings.TrimSpace(out.String()), nil
}

// EnvError says the test environment could not be started.
type EnvError struct{ Msg string }

func (e *EnvError) Error() string { return e.Msg }

// NewScheme returns a scheme with the core Kubernetes types and whatever the given functions add
// (for example karpv1.AddToScheme and awsv1.AddToScheme).
func NewScheme(adders ...func(*k8sruntime.Scheme) error) (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		return nil, err
	}
	for _, add := range adders {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ControlPlaneStartTimeout is how long envtest waits for etcd and kube-apiserver to come up: two minutes, or
// KUBEBUILDER_CONTROLPLANE_START_TIMEOUT when set (0 here lets envtest read it). envtest's own default, 20 s,
// is too short on a 2-CPU machine under load: kube-apiserver took longer in a stress run, and every retry failed.
func ControlPlaneStartTimeout() time.Duration {
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") != "" {
		return 0
	}
	return 2 * time.Minute
}

// Env is a running envtest API server with Dovetail's CRDs installed.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

// NewEnv starts kube-apiserver and etcd with the CRDs in config/crd and returns a client using s. Callers own the
// Env and must Stop it (typically from TestMain).
func NewEnv(s *k8sruntime.Scheme) (*Env, error) {
	bin, err := ControlPlaneBin()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, &EnvError{Msg: "missing " + b + " in " + bin + ": run 'make control-plane'"}
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDDirectoryPaths:        []string{filepath.Join(RepoRoot(), "config", "crd")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   s,
		ControlPlaneStartTimeout: ControlPlaneStartTimeout(),
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, &EnvError{Msg: "starting envtest: " + err.Error()}
	}
	if err := waitForDiscovery(cfg, env); err != nil {
		_ = env.Stop()
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// StartEnv is NewEnv for a single test: it fails the test on error and stops the server when the test ends.
func StartEnv(t testing.TB, s *k8sruntime.Scheme) *Env {
	t.Helper()
	e, err := NewEnv(s)
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return e
}

// GVK is a small helper for tests that build unstructured objects.
func GVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// waitForDiscovery waits until API discovery serves every CRD envtest installed, both per group version and in the
// aggregated document (/apis) that controller-runtime's REST mapper reads first: the API server updates the
// aggregated document after the per-version one, and a manager started in between failed its first look-up
// ("unable to retrieve the complete list of server APIs: karpenter.sh/v1: no matches"), once in about a
// hundred envtest starts. A client built earlier may cache a group without its kinds and then answer "no matches
// for kind" for the rest of the test binary (seen under load).
func waitForDiscovery(cfg *rest.Config, env *envtest.Environment) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, crd := range env.CRDs {
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			for {
				list, err := dc.ServerResourcesForGroupVersion(gv)
				if err == nil && hasResource(list.APIResources, crd.Spec.Names.Plural) {
					break
				}
				if time.Now().After(deadline) {
					return &EnvError{Msg: "CRD " + crd.Name + " not served by discovery for " + gv}
				}
				time.Sleep(100 * time.Millisecond) // polling the API server with a deadline
			}
		}
	}
	for {
		missing := aggregatedMissing(dc, env.CRDs)
		if missing == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return &EnvError{Msg: "CRD not served by aggregated discovery: " + missing}
		}
		time.Sleep(100 * time.Millisecond) // polling the API server with a deadline
	}
}

// aggregatedMissing names the first CRD version the API server's group and resource discovery (aggregated when
// the server offers it, as it does from Kubernetes 1.30) does not serve yet, or "" when it serves them all.
func aggregatedMissing(dc discovery.DiscoveryInterface, crds []*apiextensionsv1.CustomResourceDefinition) string {
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return err.Error()
	}
	// A group that failed (ours, not served yet, or another API) leaves its versions out of lists.
	served := map[string][]metav1.APIResource{}
	for _, l := range lists {
		served[l.GroupVersion] = l.APIResources
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			if !hasResource(served[gv], crd.Spec.Names.Plural) {
				return crd.Name + " (" + gv + ")"
			}
		}
	}
	return ""
}

func hasResource(rs []metav1.APIResource, plural string) bool {
	for _, r := range rs {
		if r.Name == plural {
			return true
		}
	}
	return false
}
