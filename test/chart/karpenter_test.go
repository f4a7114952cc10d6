package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Values files written for Karpenter's chart (testdata/): its v1.14 and v1.15 defaults, and a v1.15 file setting
// every key to something else. test/karpenterchart checks the first two against the released charts.
const (
	karpenter114Defaults = "karpenter-v1.14-defaults.yaml"
	karpenter115Defaults = "karpenter-v1.15-defaults.yaml"
	karpenterEverything  = "karpenter-everything.yaml"
)

var karpenterValuesFiles = []string{karpenter114Defaults, karpenter115Defaults, karpenterEverything}

// readValuesFile parses testdata/<name>; Karpenter's defaults have no cluster name, so one is set when empty.
func readValuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s, _ := v["settings"].(map[string]any)
	if s["clusterName"] == "" {
		s["clusterName"] = "prod-1"
	}
	return v
}

// absent marks an environment variable that must not be set.
const absent = "<absent>"

// containerEnv returns a container's environment: a plain value as it is, a value from the downward API as
// "fieldRef:<path>" or "resourceFieldRef:<container>/<resource>/<divisor>". A name given twice fails the test.
func containerEnv(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s is set twice", e.Name)
		}
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		case e.ValueFrom.ResourceFieldRef != nil:
			r := e.ValueFrom.ResourceFieldRef
			env[e.Name] = "resourceFieldRef:" + r.ContainerName + "/" + r.Resource + "/" + r.Divisor.String()
		default:
			env[e.Name] = "valueFrom"
		}
	}
	return env
}

// defaultEnv is what Karpenter's default values (v1.14 or v1.15) make the Deployment's environment, with cluster
// name prod-1 and release dovetail in kube-system.
func defaultEnv() map[string]string {
	return map[string]string{
		"KUBERNETES_MIN_VERSION":          "1.19.0-0",
		"KARPENTER_SERVICE":               "dovetail",
		"LOG_LEVEL":                       "info",
		"LOG_OUTPUT_PATHS":                "stdout",
		"LOG_ERROR_OUTPUT_PATHS":          "stderr",
		"METRICS_PORT":                    "8080",
		"HEALTH_PROBE_PORT":               "8081",
		"SYSTEM_NAMESPACE":                "fieldRef:metadata.namespace",
		"POD_NAMESPACE":                   "fieldRef:metadata.namespace",
		"CPU_REQUESTS":                    "resourceFieldRef:controller/requests.cpu/1m",
		"MEMORY_LIMIT":                    "resourceFieldRef:controller/limits.memory/0",
		"FEATURE_GATES":                   "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false",
		"AWS_FEATURE_GATES":               "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false",
		"BATCH_MAX_DURATION":              "10s",
		"BATCH_IDLE_DURATION":             "1s",
		"PREFERENCE_POLICY":               "Respect",
		"MIN_VALUES_POLICY":               "Strict",
		"CLUSTER_NAME":                    "prod-1",
		"VM_MEMORY_OVERHEAD_PERCENT":      "0.075",
		"RESERVED_ENIS":                   "0",
		"IGNORE_DRA_REQUESTS":             "true",
		"AMI_REFRESH_INTERVAL":            "1m",
		"SUBNET_REFRESH_INTERVAL":         "1m",
		"SECURITY_GROUP_REFRESH_INTERVAL": "1m",
	}
}

// with returns a copy of m with changes applied; a change to absent deletes the key.
func with(m map[string]string, changes map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for k, v := range changes {
		if v == absent {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// deployment decodes the rendered Deployment named name.
func deployment(t *testing.T, objs map[string]*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	u := objs["Deployment/"+name]
	if u == nil {
		t.Fatalf("no Deployment/%s; rendered %v", name, keys(objs))
	}
	var d appsv1.Deployment
	decode(t, u, &d)
	return &d
}

// controllerSecurityContext is the controller container's fixed security context.
func controllerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// TestKarpenterDefaultValues: Karpenter's own default values files (v1.14, v1.15) pass the schema and render what
// Karpenter's chart renders from them: the same environment, objects, labels and pod.
func TestKarpenterDefaultValues(t *testing.T) {
	for _, name := range []string{karpenter114Defaults, karpenter115Defaults} {
		t.Run(name, func(t *testing.T) {
			values := readValuesFile(t, name)
			objs := objects(t, values)
			want := []string{
				"ClusterRole/dovetail", "ClusterRole/dovetail-admin", "ClusterRoleBinding/dovetail", "Deployment/dovetail",
				"PodDisruptionBudget/karpenter", "Role/dovetail", "Role/dovetail-dns", "RoleBinding/dovetail", "RoleBinding/dovetail-dns", "Service/dovetail", "ServiceAccount/dovetail",
			}
			if diff := cmp.Diff(want, keys(objs)); diff != "" {
				t.Fatalf("rendered objects (-want +got):\n%s", diff)
			}
			d := deployment(t, objs, "dovetail")
			spec := d.Spec.Template.Spec
			if len(spec.Containers) != 1 {
				t.Fatalf("containers %d, want 1", len(spec.Containers))
			}
			c := spec.Containers[0]
			if diff := cmp.Diff(defaultEnv(), containerEnv(t, c)); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(controllerSecurityContext(), c.SecurityContext); diff != "" {
				t.Errorf("container securityContext: the empty profiles must not be rendered (-want +got):\n%s", diff)
			}
			selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "dovetail", "app.kubernetes.io/instance": "dovetail"}}
			got := map[string]any{
				"container": c.Name, "image": c.Image, "schedulerName": spec.SchedulerName, "hostNetwork": spec.HostNetwork,
				"dnsPolicy": spec.DNSPolicy, "initContainers": len(spec.InitContainers), "automount": spec.AutomountServiceAccountToken,
				"terminationGracePeriodSeconds": spec.TerminationGracePeriodSeconds, "priorityClassName": spec.PriorityClassName,
				"podSecurityContext": spec.SecurityContext, "antiAffinity": spec.Affinity.PodAntiAffinity,
				"spread": spec.TopologySpreadConstraints, "annotations": d.Annotations,
			}
			wantPod := map[string]any{
				"container": "controller", "image": "public.ecr.aws/karpenter/controller@" + values["controller"].(map[string]any)["image"].(map[string]any)["digest"].(string),
				"schedulerName": "default-scheduler", "hostNetwork": false, "dnsPolicy": corev1.DNSClusterFirst, "initContainers": 0,
				"automount": ptr.To(true), "terminationGracePeriodSeconds": (*int64)(nil), "priorityClassName": "system-cluster-critical",
				"podSecurityContext": &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				"antiAffinity": &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{TopologyKey: "kubernetes.io/hostname", LabelSelector: selector}}},
				"spread": []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector}},
				"annotations": map[string]string(nil),
			}
			if diff := cmp.Diff(wantPod, got); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			var sa corev1.ServiceAccount
			decode(t, objs["ServiceAccount/dovetail"], &sa)
			if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
				t.Errorf("ServiceAccount automountServiceAccountToken %v, want false (the pod mounts its token)", sa.AutomountServiceAccountToken)
			}
		})
	}
}

// TestKarpenterEveryValue renders the values file that sets every key of Karpenter's chart to a non-default value
// and checks each object key by key.
func TestKarpenterEveryValue(t *testing.T) {
	values := readValuesFile(t, karpenterEverything)
	objs := objectsWithAPIs(t, values, monitoringAPI)
	const name = "kc-autoscaler"
	want := []string{
		"ClusterRole/" + name, "ClusterRole/" + name + "-admin", "ClusterRoleBinding/" + name, "Deployment/" + name,
		"PodDisruptionBudget/autoscaler-pdb", "Role/" + name, "Role/" + name + "-dns", "RoleBinding/" + name, "RoleBinding/" + name + "-dns", "Service/" + name,
		"ServiceAccount/autoscaler-sa", "ServiceMonitor/" + name,
	}
	if diff := cmp.Diff(want, keys(objs)); diff != "" {
		t.Fatalf("rendered objects (-want +got):\n%s", diff)
	}

	// additionalLabels and additionalAnnotations reach every object; an object's own annotations are added.
	own := map[string]map[string]string{
		"Service/" + name:              {"example.com/service": "metrics"},
		"ServiceAccount/autoscaler-sa": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/autoscaler"},
	}
	for _, k := range keys(objs) {
		u := objs[k]
		wantAnn := map[string]string{"example.com/owner": "platform"}
		for ak, av := range own[k] {
			wantAnn[ak] = av
		}
		if diff := cmp.Diff(wantAnn, u.GetAnnotations()); diff != "" {
			t.Errorf("%s annotations (-want +got):\n%s", k, diff)
		}
		if l := u.GetLabels(); l["team"] != "platform" || l["app.kubernetes.io/name"] != "autoscaler" {
			t.Errorf("%s labels %v: want team=platform and app.kubernetes.io/name=autoscaler (nameOverride)", k, l)
		}
	}

	d := deployment(t, objs, name)
	spec := d.Spec.Template.Spec
	wantEnv := map[string]string{
		"KUBERNETES_MIN_VERSION":              "1.19.0-0",
		"KARPENTER_SERVICE":                   name,
		"LOG_LEVEL":                           "debug",
		"LOG_OUTPUT_PATHS":                    "stdout,/var/log/autoscaler.log",
		"LOG_ERROR_OUTPUT_PATHS":              "stderr,/var/log/autoscaler-errors.log",
		"METRICS_PORT":                        "8000",
		"HEALTH_PROBE_PORT":                   "8001",
		"SYSTEM_NAMESPACE":                    "fieldRef:metadata.namespace",
		"POD_NAMESPACE":                       "fieldRef:metadata.namespace",
		"CPU_REQUESTS":                        "resourceFieldRef:karpenter-controller/requests.cpu/1m",
		"MEMORY_LIMIT":                        "resourceFieldRef:karpenter-controller/limits.memory/0",
		"FEATURE_GATES":                       "ReservedCapacity=false,SpotToSpotConsolidation=true,NodeRepair=true,NodeOverlay=true,StaticCapacity=true,CapacityBuffer=true,PodDeletionCostManagement=true,TerminateFirstDrift=true",
		"AWS_FEATURE_GATES":                   "NodeClassCEL=true,DRANVIDIAGPU=true,DRAEFA=false,RebootForRepair=true",
		"BATCH_MAX_DURATION":                  "20s",
		"BATCH_IDLE_DURATION":                 "2s",
		"PREFERENCE_POLICY":                   "Ignore",
		"MIN_VALUES_POLICY":                   "BestEffort",
		"CLUSTER_CA_BUNDLE":                   "Q0EK",
		"CLUSTER_NAME":                        "dovetail-cluster",
		"CLUSTER_ENDPOINT":                    "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		"ISOLATED_VPC":                        "true",
		"EKS_CONTROL_PLANE":                   "true",
		"VM_MEMORY_OVERHEAD_PERCENT":          "0.1",
		"INTERRUPTION_QUEUE":                  "dovetail-interruptions",
		"ENABLE_ZONAL_SHIFT":                  "true",
		"RESERVED_ENIS":                       "1",
		"IGNORE_DRA_REQUESTS":                 "false",
		"LEGACY_NODE_REPAIR":                  "true",
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true",
		"DISABLE_DRY_RUN":                     "true",
		"AMI_REFRESH_INTERVAL":                "5m",
		"SUBNET_REFRESH_INTERVAL":             "6m",
		"SECURITY_GROUP_REFRESH_INTERVAL":     "7m",
		"EXTRA_SETTING":                       "on",
	}
	if len(spec.Containers) != 2 {
		t.Fatalf("containers %v, want the controller and one sidecar", len(spec.Containers))
	}
	c := spec.Containers[0]
	if diff := cmp.Diff(wantEnv, containerEnv(t, c)); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	sc := controllerSecurityContext()
	sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	sc.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c123,c456"}
	sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "autoscaler", "app.kubernetes.io/instance": "dovetail"}}
	other := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	wantController := corev1.Container{
		Name: "karpenter-controller", Image: "registry.example.com/autoscaler/controller@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		ImagePullPolicy: corev1.PullAlways, SecurityContext: sc,
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "extra-env"}}}},
		Ports: []corev1.ContainerPort{{Name: "http-metrics", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
			{Name: "http", ContainerPort: 8001, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
	}
	gotController := *c.DeepCopy()
	gotController.Env, gotController.LivenessProbe, gotController.ReadinessProbe = nil, nil, nil
	wantSidecar := corev1.Container{Name: "proxy", Image: "registry.example.com/proxy:1.0", Args: []string{"--listen=:9000"},
		VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "proxy-data", MountPath: "/data"}}}
	if diff := cmp.Diff([]corev1.Container{wantController, wantSidecar}, []corev1.Container{gotController, spec.Containers[1]}); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	gotPod := spec.DeepCopy()
	gotPod.Containers = nil
	wantPod := &corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(true), ServiceAccountName: "autoscaler-sa",
		ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "regcred"}},
		SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		PriorityClassName:             "system-node-critical",
		TerminationGracePeriodSeconds: ptr.To[int64](60),
		HostNetwork:                   true, SchedulerName: "custom-scheduler", DNSPolicy: corev1.DNSClusterFirstWithHostNet,
		DNSConfig:      &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
		InitContainers: []corev1.Container{{Name: "wait", Image: "registry.example.com/busybox:1.36", Command: []string{"true"}}},
		NodeSelector:   map[string]string{"kubernetes.io/os": "linux", "node-role": "system"},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "karpenter.sh/nodepool", Operator: corev1.NodeSelectorOpDoesNotExist},
					{Key: "node-role", Operator: corev1.NodeSelectorOpIn, Values: []string{"system"}}}}}}},
			PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: selector}}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: "kubernetes.io/hostname", LabelSelector: selector},
				{TopologyKey: "topology.kubernetes.io/zone", LabelSelector: other}}},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector},
			{MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: other}},
		Tolerations: []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
			{Key: "node-role", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}},
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "proxy-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	if diff := cmp.Diff(wantPod, gotPod); diff != "" {
		t.Errorf("pod spec (-want +got):\n%s", diff)
	}
	wantTemplate := map[string]any{"replicas": ptr.To[int32](3), "history": ptr.To[int32](5),
		"strategy":       appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		"podLabels":      map[string]string{"app.kubernetes.io/name": "autoscaler", "app.kubernetes.io/instance": "dovetail", "tier": "control"},
		"podAnnotations": map[string]string{"example.com/scrape": "true"}}
	gotTemplate := map[string]any{"replicas": d.Spec.Replicas, "history": d.Spec.RevisionHistoryLimit, "strategy": d.Spec.Strategy,
		"podLabels": d.Spec.Template.Labels, "podAnnotations": d.Spec.Template.Annotations}
	if diff := cmp.Diff(wantTemplate, gotTemplate); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}

	var pdb policyv1.PodDisruptionBudget
	decode(t, objs["PodDisruptionBudget/autoscaler-pdb"], &pdb)
	if diff := cmp.Diff(ptr.To(intstr.FromInt32(2)), pdb.Spec.MaxUnavailable); diff != "" {
		t.Errorf("PDB maxUnavailable (-want +got):\n%s", diff)
	}
	var sa corev1.ServiceAccount
	decode(t, objs["ServiceAccount/autoscaler-sa"], &sa)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("ServiceAccount automountServiceAccountToken %v, want false", sa.AutomountServiceAccountToken)
	}
	var svc corev1.Service
	decode(t, objs["Service/"+name], &svc)
	if diff := cmp.Diff([]corev1.ServicePort{{Name: "http-metrics", Port: 8000, TargetPort: intstr.FromString("http-metrics"), Protocol: corev1.ProtocolTCP}}, svc.Spec.Ports); diff != "" {
		t.Errorf("service ports (-want +got):\n%s", diff)
	}

	// additionalClusterRoleRules are appended to the controller's ClusterRole.
	var cr rbacv1.ClusterRole
	decode(t, objs["ClusterRole/"+name], &cr)
	extra := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}
	if diff := cmp.Diff(extra, cr.Rules[len(cr.Rules)-1]); diff != "" {
		t.Errorf("last rule of the ClusterRole (-want +got):\n%s", diff)
	}

	// The ServiceMonitor: labels, sample limit, relabelings and endpoint fields.
	sm := objs["ServiceMonitor/"+name].Object
	wantSpec := map[string]any{
		"namespaceSelector": map[string]any{"matchNames": []any{"kube-system"}},
		"selector":          map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "autoscaler", "app.kubernetes.io/instance": "dovetail"}},
		"sampleLimit":       5000,
		"endpoints": []any{map[string]any{
			"port": "http-metrics", "path": "/metrics", "interval": "30s",
			"relabelings":       []any{map[string]any{"action": "replace", "targetLabel": "cluster", "replacement": "prod"}},
			"metricRelabelings": []any{map[string]any{"action": "drop", "regex": "go_.*", "sourceLabels": []any{"__name__"}}},
		}},
	}
	if diff := cmp.Diff(jsonValue(t, wantSpec), jsonValue(t, sm["spec"])); diff != "" {
		t.Errorf("ServiceMonitor spec (-want +got):\n%s", diff)
	}
	if l := objs["ServiceMonitor/"+name].GetLabels(); l["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v: want release=prometheus (serviceMonitor.additionalLabels)", l)
	}
}

// TestKarpenterAdminRole: the aggregated ClusterRole lets namespace admins manage NodePools, NodeClaims and
// EC2NodeClasses, as Karpenter's chart does.
func TestKarpenterAdminRole(t *testing.T) {
	objs := objects(t, map[string]any{"settings": map[string]any{"clusterName": "prod-1"}})
	var cr rbacv1.ClusterRole
	decode(t, objs["ClusterRole/dovetail-admin"], &cr)
	if cr.Labels["rbac.authorization.k8s.io/aggregate-to-admin"] != "true" {
		t.Errorf("labels %v: want rbac.authorization.k8s.io/aggregate-to-admin=true", cr.Labels)
	}
	verbs := []string{"get", "list", "watch", "create", "delete", "patch"}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"}, Verbs: verbs},
		{APIGroups: []string{"karpenter.k8s.aws"}, Resources: []string{"ec2nodeclasses"}, Verbs: verbs},
	}
	if diff := cmp.Diff(want, cr.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

// TestKarpenterValueRules: single values over Karpenter's v1.15 defaults, each rendered as Karpenter's chart
// renders it (left out when empty, false or 0; templates; the DRA and repair values that exclude one another).
func TestKarpenterValueRules(t *testing.T) {
	tests := []struct {
		name     string
		settings map[string]any // merged into settings
		values   map[string]any // merged into the values
		env      map[string]string
		err      string // a fragment of the render error
	}{
		{name: "false, zero and empty settings are left out", settings: map[string]any{
			"isolatedVPC": false, "vmMemoryOverheadPercent": 0, "reservedENIs": 0, "batchMaxDuration": "", "amiRefreshInterval": "",
			"preferencePolicy": "", "legacyNodeRepair": false},
			values: map[string]any{"logLevel": "", "logOutputPaths": []any{}},
			env: map[string]string{"ISOLATED_VPC": absent, "VM_MEMORY_OVERHEAD_PERCENT": absent, "RESERVED_ENIS": absent,
				"BATCH_MAX_DURATION": absent, "AMI_REFRESH_INTERVAL": absent, "PREFERENCE_POLICY": absent, "LOG_LEVEL": absent,
				"LOG_OUTPUT_PATHS": absent}},
		{name: "templates", settings: map[string]any{"clusterName": "{{ .Release.Namespace }}-{{ .Release.Name }}",
			"batchMaxDuration": "{{ .Values.settings.batchIdleDuration }}", "isolatedVPC": "{{ .Release.IsInstall }}"},
			env: map[string]string{"CLUSTER_NAME": "kube-system-dovetail", "BATCH_MAX_DURATION": "1s", "ISOLATED_VPC": "true"}},
		{name: "booleans as strings", settings: map[string]any{"eksControlPlane": "true", "featureGates": map[string]any{"nodeRepair": "true"}},
			env: map[string]string{"EKS_CONTROL_PLANE": "true",
				"FEATURE_GATES": "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"}},
		{name: "a v1.15 gate is named when true", settings: map[string]any{"featureGates": map[string]any{"terminateFirstRepair": true}},
			env: map[string]string{"FEATURE_GATES": "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstRepair=true"}},
		{name: "ignoreDRARequests false reaches the controller", settings: map[string]any{"ignoreDRARequests": false},
			env: map[string]string{"IGNORE_DRA_REQUESTS": "false"}},
		{name: "a DRA gate stops ignoring DRA requests", settings: map[string]any{"awsFeatureGates": map[string]any{"draEFA": true}, "ignoreDRARequests": true},
			env: map[string]string{"IGNORE_DRA_REQUESTS": "false", "AWS_FEATURE_GATES": "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=true,RebootForRepair=false"}},
		{name: "enableDRA turns both DRA gates on", settings: map[string]any{"enableDRA": true},
			env: map[string]string{"IGNORE_DRA_REQUESTS": "false", "AWS_FEATURE_GATES": "NodeClassCEL=false,DRANVIDIAGPU=true,DRAEFA=true,RebootForRepair=false"}},
		{name: "enableDRA with ignoreDRARequests", settings: map[string]any{"enableDRA": true, "ignoreDRARequests": false},
			err: "settings.enableDRA cannot be combined with settings.ignoreDRARequests"},
		{name: "enableDRA with a DRA gate, even false", settings: map[string]any{"enableDRA": true, "awsFeatureGates": map[string]any{"draNVIDIAGPU": false}},
			err: "settings.enableDRA cannot be combined with settings.awsFeatureGates.draNVIDIAGPU"},
		{name: "legacy repair with terminate-first repair", settings: map[string]any{"legacyNodeRepair": true, "featureGates": map[string]any{"terminateFirstRepair": true}},
			err: "settings.legacyNodeRepair cannot be combined with settings.featureGates.terminateFirstRepair"},
		{name: "legacy repair", settings: map[string]any{"legacyNodeRepair": true, "featureGates": map[string]any{"nodeRepair": true}},
			env: map[string]string{"LEGACY_NODE_REPAIR": "true",
				"FEATURE_GATES": "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false"}},
		{name: "no cluster name", settings: map[string]any{"clusterName": "{{ \"\" }}"}, err: "settings.clusterName is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := merge(readValuesFile(t, karpenter115Defaults), tt.values)
			values = merge(values, map[string]any{"settings": tt.settings})
			if tt.err != "" {
				_, err := render(values)
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("want an error containing %q, got %v", tt.err, err)
				}
				return
			}
			d := deployment(t, objects(t, values), "dovetail")
			if diff := cmp.Diff(with(defaultEnv(), tt.env), containerEnv(t, d.Spec.Template.Spec.Containers[0])); diff != "" {
				t.Errorf("environment (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKarpenterPodValueRules: pod-level values with Karpenter's meaning.
func TestKarpenterPodValueRules(t *testing.T) {
	base := func() map[string]any { return readValuesFile(t, karpenter115Defaults) }
	t.Run("serviceAccount.create false without a name uses the namespace's default account", func(t *testing.T) {
		objs := objects(t, merge(base(), map[string]any{"serviceAccount": map[string]any{"create": false}}))
		if objs["ServiceAccount/dovetail"] != nil {
			t.Error("a ServiceAccount was rendered")
		}
		if got := deployment(t, objs, "dovetail").Spec.Template.Spec.ServiceAccountName; got != "default" {
			t.Errorf("serviceAccountName %q, want default", got)
		}
	})
	t.Run("terminationGracePeriodSeconds 0 is the Kubernetes default", func(t *testing.T) {
		objs := objects(t, merge(base(), map[string]any{"terminationGracePeriodSeconds": 0}))
		if got := deployment(t, objs, "dovetail").Spec.Template.Spec.TerminationGracePeriodSeconds; got != nil {
			t.Errorf("terminationGracePeriodSeconds %d, want unset", *got)
		}
	})
	t.Run("podAntiAffinity null lets the replicas share a host", func(t *testing.T) {
		v := base()
		v["affinity"].(map[string]any)["podAntiAffinity"] = nil // Helm deletes a key set to null from the defaults
		objs := objects(t, v)
		if got := deployment(t, objs, "dovetail").Spec.Template.Spec.Affinity.PodAntiAffinity; got != nil {
			t.Errorf("podAntiAffinity %+v, want none", got)
		}
	})
	t.Run("serviceMonitor.enabled renders a ServiceMonitor only where the API is served", func(t *testing.T) {
		v := merge(base(), map[string]any{"serviceMonitor": map[string]any{"enabled": true}})
		if objs := objects(t, v); objs["ServiceMonitor/dovetail"] != nil {
			t.Error("ServiceMonitor rendered for a cluster without monitoring.coreos.com/v1")
		}
		objs := objectsWithAPIs(t, v, monitoringAPI)
		u := objs["ServiceMonitor/dovetail"]
		if u == nil {
			t.Fatalf("no ServiceMonitor with monitoring.coreos.com/v1 served; rendered %v", keys(objs))
		}
		if _, ok := u.Object["spec"].(map[string]any)["sampleLimit"]; ok {
			t.Error("sampleLimit rendered while null")
		}
	})
	t.Run("profiles merge into the container's security context", func(t *testing.T) {
		objs := objects(t, merge(base(), map[string]any{"controller": map[string]any{"securityContext": map[string]any{
			"seccompProfile": map[string]any{"type": "Localhost", "localhostProfile": "profiles/dovetail.json"}}}}))
		want := controllerSecurityContext()
		want.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/dovetail.json")}
		if diff := cmp.Diff(want, deployment(t, objs, "dovetail").Spec.Template.Spec.Containers[0].SecurityContext); diff != "" {
			t.Errorf("securityContext (-want +got):\n%s", diff)
		}
	})
}

// TestKarpenterValuesFilesCovered: every key of the Karpenter values files is a key of values.yaml, so the
// files above exercise the schema's whole Karpenter part.
func TestKarpenterValuesFilesCovered(t *testing.T) {
	values, err := readValues()
	if err != nil {
		t.Fatal(err)
	}
	ours := leafPaths(values, "")
	for _, name := range karpenterValuesFiles {
		var missing []string
		for p := range leafPaths(readValuesFile(t, name), "") {
			if !ours[p] {
				missing = append(missing, p)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s sets keys values.yaml does not have: %v", name, missing)
		}
	}
}

// leafPaths returns the dotted paths of v's values that are not maps with keys (lists and scalars), except under
// the values whose maps are free-form (labels, annotations, selectors, profiles...), whose path stops there.
func leafPaths(v map[string]any, prefix string) map[string]bool {
	out := map[string]bool{}
	for k, val := range v {
		p := strings.TrimPrefix(prefix+"."+k, ".")
		m, ok := val.(map[string]any)
		if !ok || len(m) == 0 || freeForm[p] {
			out[p] = true
			continue
		}
		for sub := range leafPaths(m, p) {
			out[sub] = true
		}
	}
	return out
}

// freeForm are the values that are maps of the user's keys.
var freeForm = map[string]bool{
	"additionalAnnotations": true, "additionalLabels": true, "affinity": true, "podAnnotations": true, "podLabels": true,
	"nodeSelector": true, "podSecurityContext": true, "strategy": true, "dnsConfig": true, "resources": true,
	"service.annotations": true, "serviceAccount.annotations": true, "serviceMonitor.additionalLabels": true,
	"serviceMonitor.endpointConfig": true, "controller.resources": true, "controller.securityContext.appArmorProfile": true,
	"controller.securityContext.seLinuxOptions": true, "controller.securityContext.seccompProfile": true,
}

// jsonValue is v as encoding/json decodes it (numbers as float64), for comparing unstructured content.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
