package karpenterchart

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The releases of Karpenter's chart compared; the chart is the same in every patch release of a minor version
// (v1.14.0 to v1.14.3, v1.15.0 to v1.15.2).
const (
	karpenter114 = "v1.14.3"
	karpenter115 = "v1.15.2"
)

// repoRoot is the repository's root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// karpenterChart loads charts/karpenter of github.com/aws/karpenter-provider-aws@version from the Go module proxy.
// `go mod download` reports an error for a module whose go directive is newer than the local toolchain after it
// has stored the zip, so the zip is used whenever it is there.
func karpenterChart(t *testing.T, version string) *chart.Chart {
	t.Helper()
	mod := "github.com/aws/karpenter-provider-aws"
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, runErr := cmd.Output()
	var info struct{ Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("go mod download %s@%s: %v (%v)", mod, version, err, runErr)
	}
	if info.Zip == "" {
		t.Fatalf("go mod download %s@%s: %s", mod, version, info.Error)
	}
	zr, err := zip.OpenReader(info.Zip)
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v (%s)", mod, version, err, info.Error)
	}
	defer zr.Close()
	prefix := mod + "@" + version + "/charts/karpenter/"
	var files []*loader.BufferedFile
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, &loader.BufferedFile{Name: strings.TrimPrefix(f.Name, prefix), Data: b})
	}
	if len(files) == 0 {
		t.Fatalf("%s has no charts/karpenter", info.Zip)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		t.Fatalf("loading Karpenter's chart %s: %v", version, err)
	}
	return ch
}

func ourChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(filepath.Join(repoRoot(), "charts", "dovetail"))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// valuesFile parses test/chart/testdata/<name>, a values file written for Karpenter's chart.
func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "test", "chart", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// render renders ch with values, release "dovetail" in kube-system, on a Kubernetes 1.34 cluster serving
// monitoring.coreos.com/v1, and decodes every object, keyed "Kind/namespace/name".
func render(t *testing.T, ch *chart.Chart, values map[string]any) (map[string]*unstructured.Unstructured, error) {
	t.Helper()
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.34.0", Major: "1", Minor: "34"}
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), "monitoring.coreos.com/v1")
	vals, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: "dovetail", Namespace: "kube-system", Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	objs := map[string]*unstructured.Unstructured{}
	for name, text := range rendered {
		if strings.HasPrefix(path.Base(name), "_") || path.Ext(name) == ".txt" {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if err == io.EOF {
					break
				}
				t.Fatalf("%s: %v\n%s", name, err, text)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			objs[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
		}
	}
	return objs, nil
}

// deepCopyValues copies a values map (render must not share maps between the two charts: Karpenter's templates
// patch .Values in place).
func deepCopyValues(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// chartValues parses the chart's own values.yaml.
func chartValues(t *testing.T, ch *chart.Chart) map[string]any {
	t.Helper()
	for _, f := range ch.Raw {
		if f.Name == "values.yaml" {
			var v map[string]any
			if err := yaml.Unmarshal(f.Data, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatal("the chart has no values.yaml")
	return nil
}

// TestValuesFilesAreKarpentersDefaults: the values files test/chart renders as Karpenter's defaults are exactly
// the values.yaml of Karpenter's charts.
func TestValuesFilesAreKarpentersDefaults(t *testing.T) {
	for version, file := range map[string]string{karpenter114: "karpenter-v1.14-defaults.yaml", karpenter115: "karpenter-v1.15-defaults.yaml"} {
		t.Run(version, func(t *testing.T) {
			if diff := cmp.Diff(chartValues(t, karpenterChart(t, version)), valuesFile(t, file)); diff != "" {
				t.Errorf("test/chart/testdata/%s differs from Karpenter's values.yaml (-karpenter +ours):\n%s", file, diff)
			}
		})
	}
}

// ownDefaults are the values whose default differs from Karpenter's chart on purpose (docs/helm.md).
var ownDefaults = map[string]string{
	"controller.image.repository": "Dovetail's image",
	"controller.image.tag":        "Dovetail's image (empty: the chart's appVersion)",
	"controller.image.digest":     "Dovetail's image",
	"podDisruptionBudget.name":    "empty: the release's full name rather than a fixed karpenter",
}

// TestDefaultsAreKarpenters: every value of Karpenter's v1.15 chart is a value of ours with the same default,
// except ownDefaults; every v1.14 value is one of ours.
func TestDefaultsAreKarpenters(t *testing.T) {
	ours := leaves(chartValues(t, ourChart(t)), "")
	for _, version := range []string{karpenter114, karpenter115} {
		t.Run(version, func(t *testing.T) {
			theirs := leaves(chartValues(t, karpenterChart(t, version)), "")
			var missing, differ []string
			for _, p := range sortedKeys(theirs) {
				v, ok := ours[p]
				switch {
				case !ok:
					missing = append(missing, p)
				case version == karpenter115 && ownDefaults[p] == "" && !cmp.Equal(theirs[p], v):
					differ = append(differ, fmt.Sprintf("%s: Karpenter %v, ours %v", p, theirs[p], v))
				}
			}
			if len(missing) > 0 {
				t.Errorf("values of Karpenter's chart that ours lacks: %v", missing)
			}
			if len(differ) > 0 {
				t.Errorf("defaults that differ from Karpenter's:\n%s", strings.Join(differ, "\n"))
			}
		})
	}
}

// leaves maps the dotted path of every value that is not a map with keys to the value.
func leaves(v map[string]any, prefix string) map[string]any {
	out := map[string]any{}
	for k, val := range v {
		p := strings.TrimPrefix(prefix+"."+k, ".")
		if m, ok := val.(map[string]any); ok && len(m) > 0 && p != "affinity" && p != "nodeSelector" && p != "podSecurityContext" && p != "strategy" {
			for sp, sv := range leaves(m, p) {
				out[sp] = sv
			}
			continue
		}
		out[p] = val
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// onlyKarpenter are the objects Karpenter's chart renders and ours does not (fullname "dovetail-autoscaler"):
// Karpenter splits the controller's rules into a core and an AWS ClusterRole (ours has one, named like Karpenter's
// AWS one), and reads the kube-dns Service, which Dovetail does not.
var onlyKarpenter = []string{
	"ClusterRole//%s-core", "ClusterRoleBinding//%s-core", "Role/kube-system/%s-dns", "RoleBinding/kube-system/%s-dns",
}

// onlyDovetailEnv are the variables only our chart sets: the namespace under Dovetail's name, and Dovetail's own
// values (settings.region, settings.kubeClientQPS, settings.kubeClientBurst).
var onlyDovetailEnv = map[string]bool{"POD_NAMESPACE": true, "AWS_REGION": true, "KUBE_CLIENT_QPS": true, "KUBE_CLIENT_BURST": true}

// since115Env are the variables Karpenter's chart sets from v1.15 on; ours sets them for v1.14 values files too.
var since115Env = map[string]bool{"AWS_FEATURE_GATES": true, "SECURITY_GROUP_REFRESH_INTERVAL": true, "LEGACY_NODE_REPAIR": true}

// TestRendersLikeKarpenter renders Karpenter's chart and ours with the same values files and compares the objects.
func TestRendersLikeKarpenter(t *testing.T) {
	ours := ourChart(t)
	type valuesCase struct {
		name   string
		values func(t *testing.T) map[string]any
	}
	file := func(name string, settings map[string]any) func(t *testing.T) map[string]any {
		return func(t *testing.T) map[string]any {
			v := valuesFile(t, name)
			s := v["settings"].(map[string]any)
			for k, val := range settings {
				if m, ok := val.(map[string]any); ok {
					for mk, mv := range m {
						s[k].(map[string]any)[mk] = mv
					}
					continue
				}
				s[k] = val
			}
			if s["clusterName"] == "" {
				s["clusterName"] = "prod-1"
			}
			// Both charts' names would differ (karpenter, dovetail): give them one.
			if v["nameOverride"] == "" {
				v["nameOverride"] = "autoscaler"
			}
			return v
		}
	}
	cases := map[string][]valuesCase{
		karpenter114: {
			{"defaults", file("karpenter-v1.14-defaults.yaml", nil)},
		},
		karpenter115: {
			{"defaults", file("karpenter-v1.15-defaults.yaml", nil)},
			{"every value", file("karpenter-everything.yaml", nil)},
			{"enableDRA", file("karpenter-v1.15-defaults.yaml", map[string]any{"enableDRA": true})},
			{"ignoreDRARequests false", file("karpenter-v1.15-defaults.yaml", map[string]any{"ignoreDRARequests": false})},
			{"draEFA", file("karpenter-v1.15-defaults.yaml", map[string]any{"awsFeatureGates": map[string]any{"draEFA": true}})},
			{"false and zero settings", file("karpenter-v1.15-defaults.yaml", map[string]any{
				"vmMemoryOverheadPercent": 0, "reservedENIs": 0, "batchIdleDuration": "", "isolatedVPC": false})},
			{"templates", file("karpenter-v1.15-defaults.yaml", map[string]any{
				"clusterName": "{{ .Release.Name }}-x", "interruptionQueue": "{{ .Release.Namespace }}-q"})},
			{"terminate-first repair", file("karpenter-v1.15-defaults.yaml", map[string]any{
				"featureGates": map[string]any{"terminateFirstRepair": true, "nodeRepair": true}})},
		},
	}
	for _, version := range []string{karpenter114, karpenter115} {
		karpenter := karpenterChart(t, version)
		for _, vc := range cases[version] {
			t.Run(version+"/"+vc.name, func(t *testing.T) {
				values := vc.values(t)
				theirs, err := render(t, karpenter, deepCopyValues(t, values))
				if err != nil {
					t.Fatalf("Karpenter's chart: %v", err)
				}
				got, err := render(t, ours, deepCopyValues(t, values))
				if err != nil {
					t.Fatalf("our chart: %v", err)
				}
				compare(t, version, theirs, got)
			})
		}
	}
	// Values Karpenter's chart refuses, ours refuses too.
	karpenter := karpenterChart(t, karpenter115)
	for name, settings := range map[string]map[string]any{
		"enableDRA with ignoreDRARequests": {"enableDRA": true, "ignoreDRARequests": true},
		"enableDRA with draEFA":            {"enableDRA": true, "awsFeatureGates": map[string]any{"draEFA": false}},
		"legacy with terminate-first":      {"legacyNodeRepair": true, "featureGates": map[string]any{"terminateFirstRepair": true}},
		"no cluster name":                  {"clusterName": "{{ \"\" }}"},
	} {
		t.Run(karpenter115+"/refused/"+name, func(t *testing.T) {
			values := file("karpenter-v1.15-defaults.yaml", settings)(t)
			if _, err := render(t, karpenter, deepCopyValues(t, values)); err == nil {
				t.Fatal("Karpenter's chart renders these values: the case proves nothing")
			}
			if _, err := render(t, ours, deepCopyValues(t, values)); err == nil {
				t.Error("our chart renders values Karpenter's chart refuses")
			}
		})
	}
}

// compare checks our objects against Karpenter's, object by object.
func compare(t *testing.T, version string, theirs, ours map[string]*unstructured.Unstructured) {
	t.Helper()
	fullname := ""
	for k, u := range theirs {
		if strings.HasPrefix(k, "Deployment/") {
			fullname = u.GetName()
		}
	}
	wantOnly := map[string]bool{}
	for _, f := range onlyKarpenter {
		wantOnly[fmt.Sprintf(f, fullname)] = true
	}
	var onlyTheirs, onlyOurs []string
	for _, k := range sortedKeys(theirs) {
		if ours[k] == nil && !wantOnly[k] {
			onlyTheirs = append(onlyTheirs, k)
		}
	}
	for _, k := range sortedKeys(ours) {
		if theirs[k] == nil {
			onlyOurs = append(onlyOurs, k)
		}
	}
	if len(onlyTheirs)+len(onlyOurs) > 0 {
		t.Errorf("objects only Karpenter's chart renders: %v; only ours: %v", onlyTheirs, onlyOurs)
	}
	for _, k := range sortedKeys(ours) {
		k8s := theirs[k]
		if k8s == nil {
			continue
		}
		o := ours[k]
		if diff := cmp.Diff(metadata(k8s), metadata(o)); diff != "" {
			t.Errorf("%s metadata (-karpenter +ours):\n%s", k, diff)
		}
		kind := strings.SplitN(k, "/", 2)[0]
		switch kind {
		case "Deployment":
			compareDeployment(t, version, k8s, o)
		case "ClusterRole":
			compareClusterRole(t, k, theirs, k8s, o)
		case "Role":
			// Leader election: Karpenter's Lease is karpenter-leader-election, ours dovetail-leader-election.
		default:
			// Service, ServiceAccount, ServiceMonitor, PodDisruptionBudget and the bindings: the same object.
			if diff := cmp.Diff(body(k8s), body(o)); diff != "" {
				t.Errorf("%s (-karpenter +ours):\n%s", k, diff)
			}
		}
	}
}

// metadata is an object's labels and annotations, without the labels naming the chart and its version.
func metadata(u *unstructured.Unstructured) map[string]any {
	labels := u.GetLabels()
	delete(labels, "helm.sh/chart")
	delete(labels, "app.kubernetes.io/version")
	return map[string]any{"labels": labels, "annotations": u.GetAnnotations()}
}

// body is an object without its metadata.
func body(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out
}

// compareClusterRole: the aggregated admin role is the same; the controller's rules differ (Dovetail's are what its
// controllers call), but additionalClusterRoleRules end both the core ClusterRole of Karpenter and ours.
func compareClusterRole(t *testing.T, key string, theirs map[string]*unstructured.Unstructured, k8s, ours *unstructured.Unstructured) {
	t.Helper()
	if strings.HasSuffix(key, "-admin") {
		if diff := cmp.Diff(body(k8s), body(ours)); diff != "" {
			t.Errorf("%s (-karpenter +ours):\n%s", key, diff)
		}
		return
	}
	core := theirs[key+"-core"]
	if core == nil {
		t.Fatalf("Karpenter's chart renders no %s-core", key)
	}
	var kr, or rbacv1.ClusterRole
	decode(t, core, &kr)
	decode(t, ours, &or)
	var n int
	for _, r := range kr.Rules {
		if r.APIGroups[0] == "" && len(r.Resources) == 1 && r.Resources[0] == "configmaps" {
			n++ // the file's additionalClusterRoleRules
		}
	}
	if n > len(or.Rules) {
		t.Fatalf("%s has %d rules, fewer than Karpenter's additional ones", key, len(or.Rules))
	}
	if diff := cmp.Diff(kr.Rules[len(kr.Rules)-n:], or.Rules[len(or.Rules)-n:]); diff != "" {
		t.Errorf("%s: additional rules (-karpenter +ours):\n%s", key, diff)
	}
}

// compareDeployment: the same Deployment but for the image reference (Karpenter keeps the tag before the digest)
// and the environment, compared by variable.
func compareDeployment(t *testing.T, version string, k8s, ours *unstructured.Unstructured) {
	t.Helper()
	var kd, od appsv1.Deployment
	decode(t, k8s, &kd)
	decode(t, ours, &od)
	kEnv := env(t, kd.Spec.Template.Spec.Containers[0])
	oEnv := env(t, od.Spec.Template.Spec.Containers[0])
	for name := range oEnv {
		if onlyDovetailEnv[name] || version == karpenter114 && since115Env[name] {
			delete(oEnv, name)
		}
	}
	for _, gates := range []string{"FEATURE_GATES", "AWS_FEATURE_GATES"} {
		if _, ok := kEnv[gates]; ok {
			kEnv[gates], oEnv[gates] = trueGates(kEnv[gates]), trueGates(oEnv[gates])
		}
	}
	if diff := cmp.Diff(kEnv, oEnv); diff != "" {
		t.Errorf("controller environment (-karpenter +ours):\n%s", diff)
	}
	for _, d := range []*appsv1.Deployment{&kd, &od} {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = nil
		if repo, digest, ok := strings.Cut(c.Image, "@"); ok {
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			c.Image = repo + "@" + digest
		}
		if len(d.Spec.Template.Annotations) == 0 {
			d.Spec.Template.Annotations = nil
		}
	}
	if diff := cmp.Diff(kd.Spec, od.Spec); diff != "" {
		t.Errorf("Deployment spec (-karpenter +ours):\n%s", diff)
	}
}

// env is a container's environment by name (valueFrom as JSON); a name set twice fails the test.
func env(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range c.Env {
		if _, dup := out[e.Name]; dup {
			t.Errorf("%s set twice", e.Name)
		}
		if e.ValueFrom != nil {
			b, _ := json.Marshal(e.ValueFrom)
			out[e.Name] = string(b)
			continue
		}
		out[e.Name] = e.Value
	}
	return out
}

// trueGates is the sorted list of the gates a Name=bool list turns on (a gate left out is off: every gate Karpenter
// defaults on is always named).
func trueGates(v string) string {
	var on []string
	for _, pair := range strings.Split(v, ",") {
		if name, val, ok := strings.Cut(pair, "="); ok && strings.TrimSpace(val) == "true" {
			on = append(on, strings.TrimSpace(name))
		}
	}
	sort.Strings(on)
	return strings.Join(on, ",")
}

func decode(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s/%s: %v", u.GetKind(), u.GetName(), err)
	}
}
