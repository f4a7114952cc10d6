package scheduling_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// poolWant is what one NodePool's analysis must say: fits, or the code plus substrings of reason and fix, and
// the blocking stage.
type poolWant struct {
	fits   bool
	code   scheduling.ReasonCode
	stage  string
	reason string
	fix    string
}

func TestExplainNodePools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pools []*scheduling.NodePool
		types []*cloudprovider.InstanceType
		nodes []*scheduling.StateNode
		pod   *corev1.Pod
		// edit adds volume objects to the snapshot
		edit func(*scheduling.Snapshot)
		want map[string]poolWant
	}{
		{name: "fits", pod: test.SchedPod("p").Requests("1", "1Gi").Obj(),
			want: map[string]poolWant{"default": {fits: true}}},
		{name: "too big for every type", pod: test.SchedPod("p").Requests("96", "").Obj(),
			want: map[string]poolWant{"default": {code: scheduling.ReasonResources, stage: scheduling.StageResources,
				reason: "requests 96 cpu; largest instance type allowed by NodePool default has 8", fix: "lower the pod's requests"}}},
		{name: "pool requirements keep out the bigger types",
			pools: []*scheduling.NodePool{test.SchedNodePool("general").Requirement("example.com/cpu", corev1.NodeSelectorOpIn, "2").Obj()},
			pod:   test.SchedPod("p").Requests("3", "").Obj(),
			want: map[string]poolWant{"general": {code: scheduling.ReasonResources, stage: scheduling.StageResources,
				reason: "requests 3 cpu; largest instance type allowed by NodePool general has 2",
				fix:    "allow example.com/cpu 4 (or 8) in NodePool general's requirements (e.g. m.xlarge)"}}},
		{name: "extended resource excluded by the pool",
			pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "s.large", "m.xlarge").Obj()},
			pod:   test.SchedPod("p").Requests("1", "").Request("nvidia.com/gpu", "1").Obj(),
			want: map[string]poolWant{"gpu": {code: scheduling.ReasonResources, stage: scheduling.StageResources,
				reason: "requests 1 nvidia.com/gpu; no instance type allowed by NodePool gpu has nvidia.com/gpu",
				fix:    "allow instance type gpu.xlarge in NodePool gpu's requirements"}}},
		{name: "taint", pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()},
			pod: test.SchedPod("p").Obj(),
			want: map[string]poolWant{"gpu": {code: scheduling.ReasonTaints, stage: scheduling.StageTaints,
				reason: "pod does not tolerate taint dedicated=gpu:NoSchedule", fix: "add a toleration for dedicated=gpu:NoSchedule to the pod"}}},
		{name: "tolerated taint fits", pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()},
			pod:  test.SchedPod("p").Toleration("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
			want: map[string]poolWant{"gpu": {fits: true}}},
		{name: "cpu limit", pools: []*scheduling.NodePool{test.SchedNodePool("general").Limit(corev1.ResourceCPU, "100").Usage(corev1.ResourceCPU, "99").Obj()},
			pod: test.SchedPod("p").Requests("3", "").Obj(),
			want: map[string]poolWant{"general": {code: scheduling.ReasonLimits, stage: scheduling.StageLimits,
				reason: "exceed NodePool general's limits (cpu 99 of 100 in use)", fix: "raise NodePool general's limit cpu from 100 to at least 103"}}},
		{name: "nodes limit", pools: []*scheduling.NodePool{test.SchedNodePool("general").Limit(scheduling.ResourceNodes, "2").Usage(scheduling.ResourceNodes, "2").Obj()},
			pod: test.SchedPod("p").Obj(),
			want: map[string]poolWant{"general": {code: scheduling.ReasonLimits, stage: scheduling.StageLimits,
				reason: "limit of 2 nodes reached", fix: "raise NodePool general's limit nodes from 2 to at least 3"}}},
		{name: "zone conflict", pools: []*scheduling.NodePool{test.SchedNodePool("general").Requirement(zoneKey, corev1.NodeSelectorOpIn, "a", "b").Obj()},
			pod: test.SchedPod("p").Zone("d").Obj(),
			want: map[string]poolWant{"general": {code: scheduling.ReasonRequirements, stage: scheduling.StagePodRequirements,
				reason: "no zone satisfies both the pod's zone requirement [d] and NodePool general's zones [a, b]", fix: "allow zone [d] in NodePool general's requirements"}}},
		{name: "label the pool does not set", pod: test.SchedPod("p").NodeSelector("team", "x").Obj(),
			want: map[string]poolWant{"default": {code: scheduling.ReasonRequirements, stage: scheduling.StagePodRequirements,
				reason: "does not set label team", fix: "add label team=x to NodePool default's template labels"}}},
		{name: "pod selects a type the pool excludes",
			pools: []*scheduling.NodePool{test.SchedNodePool("general").Requirement("example.com/cpu", corev1.NodeSelectorOpIn, "2").Obj()},
			pod:   test.SchedPod("p").NodeSelector(corev1.LabelInstanceTypeStable, "l.2xlarge").Obj(),
			want: map[string]poolWant{"general": {code: scheduling.ReasonRequirements, stage: scheduling.StagePodRequirements,
				reason: "no instance type allowed by NodePool general satisfies node.kubernetes.io/instance-type In [l.2xlarge]",
				fix:    "allow example.com/cpu 8 in NodePool general's requirements (e.g. l.2xlarge)"}}},
		{name: "no capacity left", types: []*cloudprovider.InstanceType{
			test.SchedInstanceType("t", "2", "8Gi").Unavailable("a", "spot", 0.03).Unavailable("a", "on-demand", 0.1).Obj()},
			pod: test.SchedPod("p").Obj(),
			want: map[string]poolWant{"default": {code: scheduling.ReasonOfferings, stage: scheduling.StageOfferings,
				reason: "unavailable (insufficient capacity)", fix: "wait for capacity"}}},
		{name: "capacity type not offered", pools: []*scheduling.NodePool{test.SchedNodePool("spot").Requirement(ctKey, corev1.NodeSelectorOpIn, "spot").Obj()},
			pod: test.SchedPod("p").Obj(),
			want: map[string]poolWant{"spot": {code: scheduling.ReasonOfferings, stage: scheduling.StageOfferings,
				reason: "allowed capacity types [spot]", fix: "allow capacity type on-demand in NodePool spot's requirements"}}},
		{name: "zone anti-affinity with every zone taken",
			nodes: []*scheduling.StateNode{
				test.SchedNode("na", "1", "1Gi").Zone("a").Pods(test.SchedPod("wa").Labels("app", "web").Obj()).Obj(),
				test.SchedNode("nb", "1", "1Gi").Zone("b").Pods(test.SchedPod("wb").Labels("app", "web").Obj()).Obj(),
				test.SchedNode("nc", "1", "1Gi").Zone("c").Pods(test.SchedPod("wc").Labels("app", "web").Obj()).Obj(),
			},
			pod: test.SchedPod("p").Labels("app", "web").PodAntiAffinity(zoneKey, "app", "web").Obj(),
			want: map[string]poolWant{"default": {code: scheduling.ReasonPodAffinity, stage: scheduling.StageTopology,
				reason: "pod anti-affinity on topology.kubernetes.io/zone", fix: "allow more zone domains in NodePool default"}}},
		{name: "bound volume outside the pool's zones", pools: []*scheduling.NodePool{test.SchedNodePool("general").Requirement(zoneKey, corev1.NodeSelectorOpIn, "a").Obj()},
			pod: test.SchedPod("p").PVC("data").Obj(), edit: volumeIn("b"),
			want: map[string]poolWant{"general": {code: scheduling.ReasonVolumes, stage: scheduling.StageVolumes,
				reason: "the pod's volumes need topology.kubernetes.io/zone In [b]", fix: "allow zone b in NodePool general's requirements"}}},
		{name: "bound volume where no fitting type is offered", types: []*cloudprovider.InstanceType{
			test.SchedInstanceType("t", "2", "8Gi").Zones(0.1, "a", "c").Obj()},
			pod: test.SchedPod("p").PVC("data").Obj(), edit: volumeIn("b"),
			want: map[string]poolWant{"default": {code: scheduling.ReasonVolumes, stage: scheduling.StageOfferings,
				reason: "the pod's volumes need zone [b], where NodePool default offers no instance type that fits (they are offered in a, c)", fix: "move the volume"}}},
		{name: "pod zone where nothing is offered", types: []*cloudprovider.InstanceType{
			test.SchedInstanceType("t", "2", "8Gi").Zones(0.1, "a", "c").Obj()},
			pod: test.SchedPod("p").Zone("b").Obj(),
			want: map[string]poolWant{"default": {code: scheduling.ReasonOfferings, stage: scheduling.StageOfferings,
				reason: "allowed zones [b]", fix: "allow zone a or c in the pod's node affinity"}}},
		{name: "second required term fits", pools: []*scheduling.NodePool{test.SchedNodePool("general").Requirement(zoneKey, corev1.NodeSelectorOpIn, "a").Obj()},
			pod: test.SchedPod("p").RequiredNodeTerm(test.NodeRequirement(zoneKey, corev1.NodeSelectorOpIn, "b")).
				RequiredNodeTerm(test.NodeRequirement(zoneKey, corev1.NodeSelectorOpIn, "a")).Obj(),
			want: map[string]poolWant{"general": {fits: true}}},
		{name: "several pools, each its own reason",
			pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Weight(10).Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
				test.SchedNodePool("general").Limit(corev1.ResourceCPU, "4").Usage(corev1.ResourceCPU, "4").Obj()},
			pod: test.SchedPod("p").Requests("1", "").Obj(),
			want: map[string]poolWant{"gpu": {code: scheduling.ReasonTaints, stage: scheduling.StageTaints, reason: "dedicated=gpu:NoSchedule"},
				"general": {code: scheduling.ReasonLimits, stage: scheduling.StageLimits, fix: "from 4 to at least 6"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := explainOne(t, tc.pools, tc.types, tc.nodes, tc.pod, tc.edit)
			got := map[string]PoolExplanationView{}
			for _, p := range e.NodePools {
				got[p.NodePool] = view(p)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d NodePools, want %d: %+v", len(got), len(tc.want), got)
			}
			for name, w := range tc.want {
				g, ok := got[name]
				if !ok {
					t.Fatalf("no analysis for NodePool %s", name)
				}
				if g.fits != w.fits || g.code != w.code || (w.stage != "" && g.stage != w.stage) {
					t.Errorf("NodePool %s: fits %v code %q stage %q, want fits %v code %q stage %q (reason %q)", name, g.fits, g.code, g.stage,
						w.fits, w.code, w.stage, g.reason)
				}
				if !strings.Contains(g.reason, w.reason) {
					t.Errorf("NodePool %s: reason %q does not contain %q", name, g.reason, w.reason)
				}
				if !strings.Contains(g.fix, w.fix) {
					t.Errorf("NodePool %s: fix %q does not contain %q", name, g.fix, w.fix)
				}
			}
		})
	}
}

// volumeIn adds claim default/data bound to a volume whose node affinity is the zone.
func volumeIn(zone string) func(*scheduling.Snapshot) {
	return func(s *scheduling.Snapshot) {
		s.PersistentVolumeClaims = append(s.PersistentVolumeClaims, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"}})
		s.PersistentVolumes = append(s.PersistentVolumes, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{test.NodeRequirement(zoneKey, corev1.NodeSelectorOpIn, zone)}}}}}}})
	}
}

// PoolExplanationView is the part of a PoolExplanation the table compares.
type PoolExplanationView struct {
	fits               bool
	code               scheduling.ReasonCode
	stage, reason, fix string
}

func view(p scheduling.PoolExplanation) PoolExplanationView {
	v := PoolExplanationView{fits: p.Fits, code: p.Code, reason: p.Reason, fix: p.Fix}
	for _, s := range p.Stages {
		if s.Blocking {
			v.stage = s.Name
		}
	}
	return v
}

func explainOne(t *testing.T, pools []*scheduling.NodePool, its []*cloudprovider.InstanceType, nodes []*scheduling.StateNode, pod *corev1.Pod,
	edits ...func(*scheduling.Snapshot)) *scheduling.Explanation {
	t.Helper()
	if pools == nil {
		pools = []*scheduling.NodePool{test.SchedNodePool("default").Obj()}
	}
	if its == nil {
		its = standardTypes()
	}
	snap := &scheduling.Snapshot{Pods: []*corev1.Pod{pod}, Nodes: nodes, NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{}}
	for _, p := range pools {
		snap.InstanceTypes[p.Name] = its
	}
	for _, edit := range edits {
		if edit != nil {
			edit(snap)
		}
	}
	e, err := scheduling.Explain(context.Background(), snap, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, scheduling.Options{})
	if err != nil {
		t.Fatalf("Explain: %v", err)
	}
	return e
}

func TestExplainStagesRecordRemovals(t *testing.T) {
	pools := []*scheduling.NodePool{test.SchedNodePool("general").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj()}
	e := explainOne(t, pools, nil, nil, test.SchedPod("p").Requests("3", "").Obj())
	type row struct {
		Name          string
		Before, After int
		Removed       []string
	}
	var got []row
	for _, s := range e.NodePools[0].Stages {
		got = append(got, row{s.Name, s.Before, s.After, s.Removed})
	}
	want := []row{
		{scheduling.StageTaints, 5, 5, nil},
		{scheduling.StageNodePoolRequirements, 5, 4, []string{"arm.large"}},
		{scheduling.StagePodRequirements, 4, 4, nil},
		{scheduling.StageResources, 4, 3, []string{"s.large"}},
		{scheduling.StageOfferings, 3, 3, nil},
		{scheduling.StageLimits, 3, 3, nil},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stages (-want +got):\n%s", d)
	}
	if c := e.NodePools[0].Cheapest; c == nil || c.Name != "m.xlarge" {
		t.Errorf("cheapest = %+v, want m.xlarge", c)
	}
	if e.Outcome.Kind != scheduling.OutcomeNewNode || e.Outcome.NodePool != "general" {
		t.Errorf("outcome = %+v, want a new node from general", e.Outcome)
	}
}

func TestExplainExistingNodes(t *testing.T) {
	nodes := []*scheduling.StateNode{
		test.SchedNode("small-1", "1", "4Gi").Obj(),
		test.SchedNode("small-2", "1", "4Gi").Obj(),
		test.SchedNode("tainted", "8", "32Gi").Taint("dedicated", "db", corev1.TaintEffectNoSchedule).Obj(),
		test.SchedNode("big", "8", "32Gi").Obj(),
	}
	e := explainOne(t, nil, nil, nodes, test.SchedPod("p").Requests("2", "").Obj())
	want := scheduling.ExistingNodes{Nodes: 4, Accepting: []string{"big"}, Rejected: 3, Reasons: []scheduling.ReasonCount{
		{Code: scheduling.ReasonResources, Reason: "insufficient cpu", Count: 2, Example: "small-1"},
		{Code: scheduling.ReasonTaints, Reason: "does not tolerate taint dedicated=db:NoSchedule", Count: 1, Example: "tainted"},
	}}
	if d := cmp.Diff(want, e.Existing); d != "" {
		t.Errorf("existing (-want +got):\n%s", d)
	}
	if e.Outcome.Kind != scheduling.OutcomeExistingNode || e.Outcome.Node != "big" {
		t.Errorf("outcome = %+v, want existing node big", e.Outcome)
	}
}

func TestExplainUnknownPod(t *testing.T) {
	snap := &scheduling.Snapshot{}
	if _, err := scheduling.Explain(context.Background(), snap, types.NamespacedName{Namespace: "default", Name: "nope"}, scheduling.Options{}); err == nil ||
		!strings.Contains(err.Error(), "default/nope") {
		t.Fatalf("Explain of a missing pod: err = %v, want one naming default/nope", err)
	}
}

// TestPlanReasonCodes checks the code Solve puts on each unplaced pod, and that the event reason names the NodePool.
func TestPlanReasonCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pools  []*scheduling.NodePool
		nodes  []*scheduling.StateNode
		pod    *corev1.Pod
		code   scheduling.ReasonCode
		reason string
	}{
		{name: "resources", pod: test.SchedPod("p").Requests("96", "").Obj(), code: scheduling.ReasonResources,
			reason: "nodepool default: requests 96 cpu; largest instance type allowed by NodePool default has 8"},
		{name: "taints", pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()},
			pod: test.SchedPod("p").Obj(), code: scheduling.ReasonTaints, reason: "nodepool gpu: pod does not tolerate taint dedicated=gpu:NoSchedule"},
		{name: "limits", pools: []*scheduling.NodePool{test.SchedNodePool("general").Limit(corev1.ResourceCPU, "1").Obj()},
			pod: test.SchedPod("p").Obj(), code: scheduling.ReasonLimits, reason: "nodepool general: every instance type that fits would exceed NodePool general's limits"},
		{name: "furthest pool wins", pools: []*scheduling.NodePool{test.SchedNodePool("gpu").Weight(10).Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
			test.SchedNodePool("general").Limit(corev1.ResourceCPU, "1").Obj()},
			pod: test.SchedPod("p").Obj(), code: scheduling.ReasonLimits, reason: "nodepool gpu: pod does not tolerate taint dedicated=gpu:NoSchedule; nodepool general: every"},
		{name: "anti-affinity", nodes: []*scheduling.StateNode{
			test.SchedNode("na", "1", "1Gi").Zone("a").Pods(test.SchedPod("wa").Labels("app", "web").Obj()).Obj(),
			test.SchedNode("nb", "1", "1Gi").Zone("b").Pods(test.SchedPod("wb").Labels("app", "web").Obj()).Obj(),
			test.SchedNode("nc", "1", "1Gi").Zone("c").Pods(test.SchedPod("wc").Labels("app", "web").Obj()).Obj()},
			pod: test.SchedPod("p").Labels("app", "web").PodAntiAffinity(zoneKey, "app", "web").Obj(), code: scheduling.ReasonPodAffinity,
			reason: "nodepool default: would violate pod anti-affinity on topology.kubernetes.io/zone"},
		{name: "no nodepool", pools: []*scheduling.NodePool{}, pod: test.SchedPod("p").Obj(), code: scheduling.ReasonNoNodePool, reason: "no NodePool"},
		{name: "missing claim", pod: test.SchedPod("p").PVC("nope").Obj(), code: scheduling.ReasonVolumes, reason: `persistentvolumeclaim "nope" not found`},
		{name: "bad affinity", pod: test.SchedPod("p").RequiredNodeTerm(test.NodeRequirement("k", corev1.NodeSelectorOpGt, "x")).Obj(),
			code: scheduling.ReasonRequirements, reason: "not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pools := tc.pools
			if pools == nil {
				pools = []*scheduling.NodePool{test.SchedNodePool("default").Obj()}
			}
			snap := &scheduling.Snapshot{Pods: []*corev1.Pod{tc.pod}, Nodes: tc.nodes, NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{}}
			for _, p := range pools {
				snap.InstanceTypes[p.Name] = standardTypes()
			}
			plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			if len(plan.Unschedulable) != 1 {
				t.Fatalf("unschedulable = %+v, want the pod", plan.Unschedulable)
			}
			u := plan.Unschedulable[0]
			if u.Code != tc.code || !strings.Contains(u.Reason, tc.reason) {
				t.Errorf("got code %q reason %q, want code %q and reason containing %q", u.Code, u.Reason, tc.code, tc.reason)
			}
		})
	}
}

// BenchmarkUnplacedReasons measures what the per-NodePool analysis adds to a solve that leaves classes unplaced:
// 200 distinct too-big classes against two NodePools of 400 instance types.
func BenchmarkUnplacedReasons(b *testing.B) {
	var its []*cloudprovider.InstanceType
	for i := 0; i < 400; i++ {
		its = append(its, test.SchedInstanceType(fmt.Sprintf("t%d", i), fmt.Sprint(2+i%64), fmt.Sprintf("%dGi", 4+i%256)).
			Label("example.com/family", fmt.Sprintf("f%d", i%50)).Zones(0.1+float64(i)/1000, "a", "b", "c").Obj())
	}
	pools := []*scheduling.NodePool{test.SchedNodePool("a").Obj(),
		test.SchedNodePool("b").Requirement("example.com/family", corev1.NodeSelectorOpIn, "f1", "f2").Obj()}
	var pods []*corev1.Pod
	for i := 0; i < 200; i++ {
		pods = append(pods, test.SchedPod(fmt.Sprintf("big%d", i)).Requests(fmt.Sprint(100+i), "").Obj())
	}
	snap := &scheduling.Snapshot{Pods: pods, NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{"a": its, "b": its}}
	b.ReportAllocs()
	for b.Loop() {
		plan, err := scheduling.Solve(context.Background(), snap, scheduling.Options{})
		if err != nil || len(plan.Unschedulable) != len(pods) {
			b.Fatalf("want every pod unplaced: %v", err)
		}
	}
}
