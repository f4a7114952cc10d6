package solver

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/test"
)

// summary is what a test compares: per new NodeClaim its pool, pods and cheapest type; plus placements.
type summary struct {
	Claims        []claimSummary
	Existing      map[string]string
	Unschedulable []string
}

type claimSummary struct {
	Pool      string
	Pods      []string
	Cheapest  string
	Zones     []string
	CapTypes  []string
	ExtraReqs []string
}

func summarize(p Plan) summary {
	s := summary{Existing: p.Existing}
	for _, c := range p.NewNodeClaims {
		cs := claimSummary{Pool: c.NodePool.Name, Cheapest: c.InstanceTypes[0].Name}
		for _, pod := range c.Pods {
			cs.Pods = append(cs.Pods, pod.Name)
		}
		for _, r := range c.Requirements {
			switch r.Key {
			case corev1.LabelTopologyZone:
				cs.Zones = r.Values
			case karpv1.CapacityTypeLabelKey:
				cs.CapTypes = r.Values
			case corev1.LabelInstanceTypeStable:
			default:
				cs.ExtraReqs = append(cs.ExtraReqs, r.Key+" "+string(r.Operator))
			}
		}
		s.Claims = append(s.Claims, cs)
	}
	for k := range p.Unschedulable {
		s.Unschedulable = append(s.Unschedulable, k)
	}
	sort.Strings(s.Unschedulable)
	return s
}

func pools(nps ...*karpv1.NodePool) []NodePoolOption {
	var out []NodePoolOption
	for _, np := range nps {
		out = append(out, NodePoolOption{NodePool: np, InstanceTypes: fake.DefaultInstanceTypes()})
	}
	return out
}

var allZones = []string{"test-zone-a", "test-zone-b", "test-zone-c"}
var bothCapTypes = []string{"on-demand", "spot"}

func TestFirstFit(t *testing.T) {
	onDemand := test.NodePool("od").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand").
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj()
	tests := []struct {
		name string
		in   Input
		want summary
	}{
		{
			name: "two small pods share one cheapest node",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("a").Requests("500m", "512Mi").Obj(), test.Pod("b").Requests("200m", "256Mi").Obj()},
				NodePools: pools(test.NodePool("default").Obj()),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "default", Pods: []string{"a", "b"},
				Cheapest: "fake-small", Zones: allZones, CapTypes: bothCapTypes}}},
		},
		{
			name: "large pod gets a larger type, zone selector narrows offerings",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("big").Requests("3", "4Gi").Zone("test-zone-b").Obj()},
				NodePools: pools(onDemand),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "od", Pods: []string{"big"},
				Cheapest: "fake-large", Zones: []string{"test-zone-b"}, CapTypes: []string{"on-demand"},
				ExtraReqs: []string{"kubernetes.io/arch In"}}}},
		},
		{
			name: "arch affinity picks arm",
			in: Input{
				Pods: []*corev1.Pod{test.Pod("arm").Requests("1", "1Gi").RequiredAffinity(corev1.NodeSelectorRequirement{
					Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}).Obj()},
				NodePools: pools(test.NodePool("default").Obj()),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "default", Pods: []string{"arm"},
				Cheapest: "fake-arm-large", Zones: allZones, CapTypes: bothCapTypes}}},
		},
		{
			name: "taint not tolerated skips the pool, tolerated pod uses it",
			in: Input{
				Pods: []*corev1.Pod{
					test.Pod("plain").Requests("100m", "").Obj(),
					test.Pod("tolerant").Requests("200m", "").Toleration("team", corev1.TolerationOpEqual, "a", corev1.TaintEffectNoSchedule).Obj(),
				},
				NodePools: pools(test.NodePool("tainted").Weight(10).Taint("team", "a", corev1.TaintEffectNoSchedule).Obj(),
					test.NodePool("open").Obj()),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{
				{Pool: "tainted", Pods: []string{"tolerant"}, Cheapest: "fake-small", Zones: allZones, CapTypes: bothCapTypes},
				{Pool: "open", Pods: []string{"plain"}, Cheapest: "fake-small", Zones: allZones, CapTypes: bothCapTypes},
			}},
		},
		{
			name: "custom label from template labels",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("team").Requests("100m", "").NodeSelector("team", "b").Obj()},
				NodePools: pools(test.NodePool("a").Weight(50).Label("team", "a").Obj(), test.NodePool("b").Label("team", "b").Obj()),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "b", Pods: []string{"team"},
				Cheapest: "fake-small", Zones: allZones, CapTypes: bothCapTypes, ExtraReqs: []string{"team In"}}}},
		},
		{
			name: "limits stop a second node",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("a").Requests("3", "").Obj(), test.Pod("b").Requests("3", "").Obj()},
				NodePools: pools(test.NodePool("capped").Limit(corev1.ResourceCPU, "5").Obj()),
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "capped", Pods: []string{"a"},
				Cheapest: "fake-arm-large", Zones: allZones, CapTypes: bothCapTypes}}, Unschedulable: []string{"default/b"}},
		},
		{
			name: "limits count current usage, only for the limited resources",
			in: Input{
				Pods: []*corev1.Pod{test.Pod("a").Requests("1", "1Gi").Obj(), test.Pod("b").Requests("1", "1Gi").Obj()},
				NodePools: []NodePoolOption{{NodePool: test.NodePool("capped").Limit(corev1.ResourceCPU, "6").Obj(),
					InstanceTypes: fake.DefaultInstanceTypes(),
					Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
						ResourceNodes: resource.MustParse("1")}}},
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "capped", Pods: []string{"a", "b"},
				Cheapest: "fake-arm-large", Zones: allZones, CapTypes: bothCapTypes}}},
		},
		{
			name: "in-flight claim takes the pod",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("a").Requests("1", "1Gi").Obj()},
				NodePools: pools(test.NodePool("default").Obj()),
				InFlight: []InFlightClaim{{NodeClaim: test.NodeClaim("default-abcde", "default").Obj(),
					Labels:    map[string]string{karpv1.NodePoolLabelKey: "default"},
					Available: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"), corev1.ResourcePods: resource.MustParse("10")}}},
			},
			want: summary{Existing: map[string]string{"default/a": "default-abcde"}},
		},
		{
			name: "too large for any type",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("huge").Requests("64", "").Obj()},
				NodePools: pools(test.NodePool("default").Obj()),
			},
			want: summary{Existing: map[string]string{}, Unschedulable: []string{"default/huge"}},
		},
		{
			name: "daemonset overhead pushes to a larger type; untolerated daemonset ignored",
			in: Input{
				Pods:      []*corev1.Pod{test.Pod("a").Requests("1", "1Gi").Obj()},
				NodePools: pools(test.NodePool("default").Obj()),
				DaemonSets: []*appsv1.DaemonSet{
					daemonSet(test.Pod("agent").Requests("1", "").Obj()),
					daemonSet(test.Pod("gpu-agent").Requests("4", "").NodeSelector("gpu", "true").Obj()),
				},
			},
			want: summary{Existing: map[string]string{}, Claims: []claimSummary{{Pool: "default", Pods: []string{"a"},
				Cheapest: "fake-arm-large", Zones: allZones, CapTypes: bothCapTypes}}},
		},
		{
			name: "no nodepools",
			in:   Input{Pods: []*corev1.Pod{test.Pod("a").Obj()}},
			want: summary{Existing: map[string]string{}, Unschedulable: []string{"default/a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(FirstFit{}.Solve(context.Background(), tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnschedulableReasonNamesTaint(t *testing.T) {
	plan := FirstFit{}.Solve(context.Background(), Input{
		Pods:      []*corev1.Pod{test.Pod("a").Obj()},
		NodePools: pools(test.NodePool("gpu").Taint("nvidia.com/gpu", "true", corev1.TaintEffectNoSchedule).Obj()),
	})
	want := `nodepool "gpu": pod does not tolerate taint nvidia.com/gpu=true:NoSchedule`
	if diff := cmp.Diff(want, plan.Unschedulable["default/a"]); diff != "" {
		t.Errorf("reason (-want +got):\n%s", diff)
	}
}

func daemonSet(pod *corev1.Pod) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: pod.Spec}}}
}

// A cpu-only limit must not turn the usage of unlimited resources (memory, pods) into negative room: with plenty of
// cpu left, every pod is placed, over as many NodeClaims as it takes.
func TestCPULimitDoesNotBlockOnUnlimitedResources(t *testing.T) {
	np := test.NodePool("default").Limit(corev1.ResourceCPU, "1000").Obj()
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		pods = append(pods, test.Pod(name).Requests("3", "6Gi").Obj())
	}
	in := Input{Pods: pods, NodePools: []NodePoolOption{{
		NodePool:      np,
		InstanceTypes: fake.DefaultInstanceTypes(),
		Usage:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")},
	}}}
	plan := FirstFit{}.Solve(context.Background(), in)
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("pods left unschedulable under a cpu-only limit with room: %v", plan.Unschedulable)
	}
	placed := 0
	for _, c := range plan.NewNodeClaims {
		placed += len(c.Pods)
	}
	if placed != len(pods) {
		t.Errorf("placed %d of %d pods", placed, len(pods))
	}
}
