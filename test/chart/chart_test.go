package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/dovetail/dovetail/pkg/settings"
)

// otherEnv are the variables the chart may set that are not settings; docs/settings.md lists each under "Other
// environment the controller reads".
var otherEnv = []string{"POD_NAMESPACE", "AWS_REGION", "MEMORY_LIMIT"}

// karpenterEnv are the variables Karpenter's chart (v1.14, v1.15) sets, which the chart sets the same way
// (docs/helm.md) whether or not pkg/settings reads them yet: the controller ignores a variable it does not know.
// TestEnvVarsAreSettings logs the ones pkg/settings does not read.
var karpenterEnv = []string{
	"KUBERNETES_MIN_VERSION", "KARPENTER_SERVICE", "SYSTEM_NAMESPACE", "CPU_REQUESTS", "MEMORY_LIMIT",
	"LOG_LEVEL", "LOG_OUTPUT_PATHS", "LOG_ERROR_OUTPUT_PATHS", "METRICS_PORT", "HEALTH_PROBE_PORT",
	"FEATURE_GATES", "AWS_FEATURE_GATES", "BATCH_MAX_DURATION", "BATCH_IDLE_DURATION", "PREFERENCE_POLICY",
	"MIN_VALUES_POLICY", "CLUSTER_CA_BUNDLE", "CLUSTER_NAME", "CLUSTER_ENDPOINT", "ISOLATED_VPC",
	"EKS_CONTROL_PLANE", "VM_MEMORY_OVERHEAD_PERCENT", "INTERRUPTION_QUEUE", "ENABLE_ZONAL_SHIFT", "RESERVED_ENIS",
	"IGNORE_DRA_REQUESTS", "LEGACY_NODE_REPAIR", "DISABLE_CLUSTER_STATE_OBSERVABILITY", "DISABLE_DRY_RUN",
	"AMI_REFRESH_INTERVAL", "SUBNET_REFRESH_INTERVAL", "SECURITY_GROUP_REFRESH_INTERVAL",
}

// notInChart are the settings the chart does not set, with the reason; a user sets them through controller.env.
var notInChart = map[string]string{
	"DISABLE_LEADER_ELECTION":             "leader election stays on in a cluster: replicas compete for the Lease",
	"ENABLE_PROFILING":                    "a debugging aid, not a deployment choice",
	"REGISTRATION_TIMEOUT":                "Karpenter's chart has no such value; the 15 min default suits clusters, tests shorten it",
	"NODE_REPAIR_TOLERATIONS":             "Karpenter has no such setting; the cloud provider's tolerations suit clusters, tests shorten them",
	"REBOOT_OBSERVATION_WINDOW":           "Karpenter has no such setting; its 20 min window is the default, tests shorten it",
	"KUBERNETES_VERSION_REFRESH_INTERVAL": "Karpenter has no such setting; its 5 min period is the default, tests shorten it",
	// Karpenter's settings its chart does not render either: the controller's default, Karpenter's, applies.
	"DISABLE_CONTROLLER_WARMUP": "Karpenter's chart does not render it; its default true applies",
	"LEADER_ELECTION_NAME":      "Karpenter's chart has no such value; the default shares Karpenter's Lease, which the Role names",
	"LEADER_ELECTION_NAMESPACE": "Karpenter's chart has no such value; the Lease lives in the release namespace, where the Role is",
	"SCHEDULER_CONFIG":          "Karpenter's chart has no value for it; empty (no scheduler configuration) applies",
}

// envName matches an environment variable entry of a container (`- name: CLUSTER_NAME`); container and port
// names are lower case, so upper-case names are environment variables.
var envName = regexp.MustCompile(`(?m)^\s*- name: "?([A-Z][A-Z0-9_]*)"?\s*$`)

// chartEnv returns every environment variable name set in the chart's template text, with the files setting it.
func chartEnv(t *testing.T) map[string][]string {
	t.Helper()
	files, err := templateFiles()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for name, text := range files {
		for _, m := range envName.FindAllStringSubmatch(text, -1) {
			out[m[1]] = append(out[m[1]], name)
		}
	}
	if len(out) == 0 {
		t.Fatal("found no environment variables in the chart's templates")
	}
	return out
}

func settingNames() map[string]bool {
	names := map[string]bool{}
	for _, o := range settings.Options() {
		names[o.Env] = true
	}
	return names
}

// TestEnvVarsAreSettings: every environment variable the chart sets is a setting of pkg/settings, one of the
// documented other variables or one Karpenter's chart sets, so a renamed or removed setting breaks this test
// rather than a deployment.
func TestEnvVarsAreSettings(t *testing.T) {
	known := settingNames()
	doc, err := os.ReadFile(filepath.Join(chartDir(), "..", "..", "docs", "settings.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range otherEnv {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/settings.md does not document %s, which the chart sets", name)
		}
		known[name] = true
	}
	for _, name := range karpenterEnv {
		if !known[name] {
			t.Logf("%s: set as Karpenter's chart sets it; pkg/settings does not read it", name)
			known[name] = true
		}
	}
	env := chartEnv(t)
	for _, name := range karpenterEnv {
		if len(env[name]) == 0 {
			t.Errorf("karpenterEnv lists %s, which the chart does not set", name)
		}
	}
	for name, files := range env {
		if !known[name] {
			t.Errorf("%s (in %s) is neither a setting in pkg/settings nor a documented variable", name, strings.Join(files, ", "))
		}
	}
}

// TestEverySettingIsMapped: each setting is set by the chart's Deployment or listed in notInChart with a reason,
// so a new setting gets a value (or a decision) in the chart.
func TestEverySettingIsMapped(t *testing.T) {
	env := chartEnv(t)
	known := settingNames()
	for _, o := range settings.Options() {
		files := env[o.Env]
		inDeployment := false
		for _, f := range files {
			inDeployment = inDeployment || f == "deployment.yaml"
		}
		_, excused := notInChart[o.Env]
		switch {
		case inDeployment && excused:
			t.Errorf("%s is set by the chart but listed in notInChart", o.Env)
		case !inDeployment && !excused:
			t.Errorf("setting %s is not set by charts/dovetail/templates/deployment.yaml: map it to a value or add it to notInChart", o.Env)
		}
	}
	for name := range notInChart {
		if !known[name] {
			t.Errorf("notInChart lists %s, which is not a setting", name)
		}
	}
}

// valuesRef matches a values path read by a template: .Values.a.b.c (also $.Values...).
var valuesRef = regexp.MustCompile(`\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)`)

// TestTemplatesReadDeclaredValues: every .Values path a template reads is declared in values.yaml (a typo would
// otherwise render silently as empty).
func TestTemplatesReadDeclaredValues(t *testing.T) {
	values, err := readValues()
	if err != nil {
		t.Fatal(err)
	}
	files, err := templateFiles()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for file, text := range files {
		for _, m := range valuesRef.FindAllStringSubmatch(text, -1) {
			seen++
			path := strings.Split(strings.TrimPrefix(m[1], "."), ".")
			var cur any = values
			for i, key := range path {
				mp, ok := cur.(map[string]any)
				if !ok {
					t.Errorf("%s reads .Values.%s, but .Values.%s is not a map in values.yaml", file, strings.Join(path, "."), strings.Join(path[:i], "."))
					break
				}
				if cur, ok = mp[key]; !ok {
					t.Errorf("%s reads .Values.%s, which values.yaml does not declare", file, strings.Join(path, "."))
					break
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no .Values references in the templates")
	}
}

// TestCRDsAreGenerated: the chart's CRDs are exactly config/crd (hack/sync-chart-crds.sh copies them).
func TestCRDsAreGenerated(t *testing.T) {
	read := func(dir string) map[string]string {
		paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(p)] = string(b)
		}
		return out
	}
	want := read(filepath.Join(chartDir(), "..", "..", "config", "crd"))
	if len(want) == 0 {
		t.Fatal("no CRDs in config/crd")
	}
	got := read(filepath.Join(chartDir(), "crds"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("charts/dovetail/crds differs from config/crd (run hack/sync-chart-crds.sh) (-config/crd +chart):\n%s", diff)
	}
}

// objects renders the chart and decodes every manifest, keyed "Kind/name".
func objects(t *testing.T, overrides map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	return objectsWithAPIs(t, overrides)
}

// objectsWithAPIs is objects on a cluster that also serves apiVersions (see renderWithAPIs).
func objectsWithAPIs(t *testing.T, overrides map[string]any, apiVersions ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := renderWithAPIs(overrides, apiVersions...)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for file, text := range out {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatalf("%s does not render to YAML: %v\n%s", file, err, text)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
				t.Fatalf("%s renders an object without apiVersion, kind or name:\n%s", file, text)
			}
			objs[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	return objs
}

// decode converts an unstructured object into a typed one, rejecting unknown fields.
func decode(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s/%s is not a valid %T: %v", u.GetKind(), u.GetName(), into, err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRenderDefaults: with only settings.clusterName given, the chart renders the controller's objects, and the
// Deployment's environment parses as valid settings with the defaults of docs/settings.md.
func TestRenderDefaults(t *testing.T) {
	objs := objects(t, map[string]any{"settings": map[string]any{"clusterName": "prod-1"}})
	want := []string{
		"ClusterRole/dovetail", "ClusterRole/dovetail-admin", "ClusterRoleBinding/dovetail", "Deployment/dovetail", "PodDisruptionBudget/dovetail",
		"Role/dovetail", "Role/dovetail-dns", "RoleBinding/dovetail", "RoleBinding/dovetail-dns", "Service/dovetail", "ServiceAccount/dovetail",
	}
	if diff := cmp.Diff(want, keys(objs)); diff != "" {
		t.Fatalf("rendered objects (-want +got):\n%s", diff)
	}
	var d appsv1.Deployment
	decode(t, objs["Deployment/dovetail"], &d)
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	s, err := settings.Parse(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the chart's default environment is not valid settings: %v\nenv: %v", err, env)
	}
	defaults, err := settings.Parse(nil, func(k string) string {
		switch k {
		case "CLUSTER_NAME":
			return "prod-1"
		case "KARPENTER_SERVICE":
			return "dovetail" // the release's Service, as Karpenter's chart names its own
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defaults, s); diff != "" {
		t.Errorf("values.yaml defaults differ from the controller's own (-controller +chart):\n%s", diff)
	}
	if d.Spec.Template.Spec.ServiceAccountName != "dovetail" || *d.Spec.Replicas != 2 {
		t.Errorf("service account %q, replicas %d", d.Spec.Template.Spec.ServiceAccountName, *d.Spec.Replicas)
	}
	anti := d.Spec.Template.Spec.Affinity.PodAntiAffinity
	if anti == nil || len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		anti.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector == nil {
		t.Errorf("expected a default pod anti-affinity selecting the release's pods, got %+v", anti)
	}
	for _, tsc := range d.Spec.Template.Spec.TopologySpreadConstraints {
		if tsc.LabelSelector == nil || tsc.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "dovetail" {
			t.Errorf("topology spread constraint without the release's selector: %+v", tsc)
		}
	}
	// The image a release publishes (hack/image TestChartDefaultsPointAtRelease ties the repository to `make image`).
	if c.Image != "ghcr.io/dovetail/dovetail:0.1.0" {
		t.Errorf("default controller image %q, want ghcr.io/dovetail/dovetail:<appVersion 0.1.0>", c.Image)
	}
	var probe *corev1.Probe = c.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe: %+v", probe)
	}
}

// TestRenderImageDigest: controller.image.digest pins the image by digest (what `make image` prints), over the tag.
func TestRenderImageDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs := objects(t, map[string]any{
		"settings":   map[string]any{"clusterName": "prod-1"},
		"controller": map[string]any{"image": map[string]any{"repository": "registry.example.com/dovetail", "tag": "x", "digest": digest}},
	})
	var d appsv1.Deployment
	decode(t, objs["Deployment/dovetail"], &d)
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/dovetail@"+digest {
		t.Errorf("image %q, want registry.example.com/dovetail@%s", got, digest)
	}
}

// TestRenderValues: values map to the settings they name, feature gates included.
func TestRenderValues(t *testing.T) {
	objs := objectsWithAPIs(t, map[string]any{
		"logLevel": "debug",
		"settings": map[string]any{
			"clusterName": "prod-1", "clusterEndpoint": "https://example.eks.amazonaws.com",
			"interruptionQueue": "prod-1", "batchIdleDuration": "2s", "batchMaxDuration": "20s",
			"isolatedVPC": true, "region": "eu-west-1",
			"featureGates": map[string]any{"spotToSpotConsolidation": true},
		},
		"serviceMonitor": map[string]any{"enabled": true},
	}, monitoringAPI)
	if objs["ServiceMonitor/dovetail"] == nil {
		t.Errorf("serviceMonitor.enabled renders no ServiceMonitor; got %v", keys(objs))
	}
	var d appsv1.Deployment
	decode(t, objs["Deployment/dovetail"], &d)
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	s, err := settings.Parse(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("rendered environment is not valid settings: %v", err)
	}
	got := map[string]any{
		"endpoint": s.ClusterEndpoint, "queue": s.InterruptionQueue, "idle": s.BatchIdleDuration.String(),
		"max": s.BatchMaxDuration.String(), "isolated": s.IsolatedVPC, "log": s.LogLevel,
		"spotToSpot": s.FeatureEnabled(settings.FeatureSpotToSpotConsolidation), "nodeRepair": s.FeatureEnabled(settings.FeatureNodeRepair),
		"region": env["AWS_REGION"],
	}
	want := map[string]any{
		"endpoint": "https://example.eks.amazonaws.com", "queue": "prod-1", "idle": "2s", "max": "20s",
		"isolated": true, "log": "debug", "spotToSpot": true, "nodeRepair": false, "region": "eu-west-1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings from values (-want +got):\n%s", diff)
	}
}

// TestRenderRequiresClusterName: without settings.clusterName the chart does not render.
func TestRenderRequiresClusterName(t *testing.T) {
	_, err := render(nil)
	if err == nil || !strings.Contains(err.Error(), "settings.clusterName is required") {
		t.Fatalf("want an error naming settings.clusterName, got %v", err)
	}
}

// TestRenderTeardownHook: teardown.enabled adds the pre-delete Job running `dovetailctl teardown` and the
// ordinary ServiceAccount, ClusterRole and binding it uses (docs/termination.md, section 4.2).
func TestRenderTeardownHook(t *testing.T) {
	objs := objects(t, map[string]any{
		"settings": map[string]any{"clusterName": "prod-1", "region": "us-east-1"},
		"teardown": map[string]any{"enabled": true, "skipAWS": true},
	})
	for _, k := range []string{"ServiceAccount/dovetail-teardown", "ClusterRole/dovetail-teardown", "ClusterRoleBinding/dovetail-teardown", "Job/dovetail-teardown"} {
		if objs[k] == nil {
			t.Fatalf("missing %s; got %v", k, keys(objs))
		}
	}
	var job batchv1.Job
	decode(t, objs["Job/dovetail-teardown"], &job)
	if job.Annotations["helm.sh/hook"] != "pre-delete" {
		t.Errorf("job annotations %v", job.Annotations)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff([]string{"/dovetailctl", "teardown", "--timeout", "20m", "--skip-aws"}, c.Command); diff != "" {
		t.Errorf("teardown command (-want +got):\n%s", diff)
	}
	if c.Image != "ghcr.io/dovetail/dovetailctl:0.1.0" {
		t.Errorf("teardown image %q, want the dovetailctl image `make image` builds", c.Image)
	}
	var role rbacv1.ClusterRole
	decode(t, objs["ClusterRole/dovetail-teardown"], &role)
	if !allows(role.Rules, "karpenter.sh", "nodepools", "delete") || !allows(role.Rules, "", "nodes", "delete") {
		t.Errorf("teardown role cannot delete NodePools and orphan Nodes: %+v", role.Rules)
	}
	if objs["Job/dovetail-teardown"].GetNamespace() != "kube-system" {
		t.Errorf("job namespace %q", objs["Job/dovetail-teardown"].GetNamespace())
	}
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	has := func(list []string, v string) bool {
		for _, x := range list {
			if x == v || x == "*" {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		if has(r.APIGroups, group) && has(r.Resources, resource) && has(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// karpenterGates are the gates of Karpenter's chart v1.15 (settings.featureGates) with its defaults.
var karpenterGates = map[string]bool{
	"ReservedCapacity": true, "SpotToSpotConsolidation": false, "NodeRepair": false, "NodeOverlay": false,
	"StaticCapacity": false, "CapacityBuffer": false, "TerminateFirstDrift": false, "TerminateFirstRepair": false,
	"PodDeletionCostManagement": false,
}

// TestFeatureGateValues: settings.featureGates has one key per gate of Karpenter's chart, with the controller's
// default for a gate it accepts and false (Karpenter's default, left out of FEATURE_GATES) for the others, and
// every gate the controller accepts is one of them: the chart neither hides a gate nor turns one on that the
// controller would refuse.
func TestFeatureGateValues(t *testing.T) {
	v, err := readValues()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := v["settings"].(map[string]any)["featureGates"].(map[string]any)
	lower := func(name string) string { return strings.ToLower(name[:1]) + name[1:] }
	want := map[string]any{}
	for name, on := range karpenterGates {
		want[lower(name)] = on
	}
	for _, g := range settings.FeatureGates() {
		if _, ok := karpenterGates[g.Name]; !ok {
			t.Errorf("the controller accepts gate %s, which Karpenter's chart does not have", g.Name)
		}
		want[lower(g.Name)] = g.Default
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings.featureGates (-want +got):\n%s", diff)
	}
}

// TestUnimplementedGateRefused: a value turning on a gate whose feature the controller lacks renders an
// environment the controller refuses, with the gate named.
func TestUnimplementedGateRefused(t *testing.T) {
	gate := ""
	for _, g := range settings.FeatureGates() {
		if !g.Implemented {
			gate = g.Name
			break
		}
	}
	if gate == "" {
		t.Skip("every feature gate is implemented")
	}
	objs := objects(t, map[string]any{
		"settings": map[string]any{"clusterName": "prod-1", "featureGates": map[string]any{strings.ToLower(gate[:1]) + gate[1:]: true}},
	})
	var d appsv1.Deployment
	decode(t, objs["Deployment/dovetail"], &d)
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	_, err := settings.Parse(nil, func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), gate+"=true: the feature is not implemented yet") {
		t.Fatalf("want the controller to refuse %s=true, got %v", gate, err)
	}
}
