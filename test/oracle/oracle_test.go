package oracle_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/scheduletest"
	"github.com/dovetail/dovetail/pkg/test"
	"github.com/dovetail/dovetail/test/oracle"
)

// randomCases is how many seeded random workloads TestRandomWorkloads checks; DOVETAIL_ORACLE_CASES overrides it.
const randomCases = 10000

func cases(t *testing.T) int {
	if v := os.Getenv("DOVETAIL_ORACLE_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("DOVETAIL_ORACLE_CASES: %v", err)
		}
		return n
	}
	if testing.Short() {
		return 500
	}
	return randomCases
}

// TestRandomWorkloads solves seeded random snapshots (scheduletest.RandomSnapshot, seeds 0..N-1) and checks every
// placement of every plan with the upstream filter plugins, each NodeClaim as every instance-type option and
// offering it may launch as. Zero violations allowed.
func TestRandomWorkloads(t *testing.T) {
	n := cases(t)
	ctx := context.Background()
	var placed, unplaced, failed, placeable int
	var placeableExamples []string
	var solveTime, checkTime time.Duration
	for seed := 0; seed < n; seed++ {
		snap := scheduletest.RandomSnapshot(rand.New(rand.NewSource(int64(seed))))
		start := time.Now()
		plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
		if err != nil {
			t.Fatalf("seed %d: solve: %v", seed, err)
		}
		solveTime += time.Since(start)
		// the plan is one way to place its pods, so no lower bound may exceed its cost
		if plan.LowerBound > plan.Cost*(1+1e-9)+1e-12 {
			t.Errorf("seed %d: lower bound %.6f above the plan's cost %.6f", seed, plan.LowerBound, plan.Cost)
		}
		start = time.Now()
		v, err := oracle.Check(ctx, snap, plan, oracle.Options{EveryOption: true, Order: true})
		if err != nil {
			t.Fatalf("seed %d: check: %v", seed, err)
		}
		checkTime += time.Since(start)
		if len(v) > 0 {
			failed++
			if failed <= 10 {
				t.Errorf("seed %d: %d violations, first: %s", seed, len(v), v[0])
			}
		}
		pl, err := oracle.Placeable(ctx, snap, plan)
		if err != nil {
			t.Fatalf("seed %d: placeable: %v", seed, err)
		}
		placeable += len(pl)
		for _, x := range pl {
			if len(placeableExamples) < 5 {
				placeableExamples = append(placeableExamples, fmt.Sprintf("seed %d: %s", seed, x))
			}
		}
		placed += len(snap.Pods) - len(plan.Unschedulable)
		unplaced += len(plan.Unschedulable)
	}
	t.Logf("%d cases, %d pods placed and checked, %d unplaced with reasons, %d failing cases; solve %v, check %v",
		n, placed, unplaced, failed, solveTime.Round(time.Millisecond), checkTime.Round(time.Millisecond))
	// not a failure: see oracle.Placeable
	t.Logf("%d unplaced pods the kube-scheduler would bind on a node of the plan's cluster; first: %v", placeable, placeableExamples)
}

// TestBenchmarkWorkloads checks the plans of the scheduling benchmark's mix (pkg/scheduling/bench_test.go) at
// 1,000 and 5,000 pods (5,000 is skipped with -short). Each NodeClaim is checked at its cheapest option, and a
// binding order is looked for at 1,000 pods. DOVETAIL_ORACLE_FULL=1 also checks every other instance-type option
// and offering, and the binding order at 5,000 pods (several minutes each).
func TestBenchmarkWorkloads(t *testing.T) {
	full := os.Getenv("DOVETAIL_ORACLE_FULL") == "1"
	for _, n := range []int{1000, 5000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			if testing.Short() && n > 1000 {
				t.Skip("short")
			}
			ctx := context.Background()
			snap := scheduletest.BenchmarkSnapshot(n)
			start := time.Now()
			plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			solve := time.Since(start)
			start = time.Now()
			v, err := oracle.Check(ctx, snap, plan, oracle.Options{EveryOption: full, Order: full || n <= 1000})
			if err != nil {
				t.Fatal(err)
			}
			reportViolations(t, v)
			t.Logf("%d pods, %d new nodes, %d unplaced, %d violations; solve %v, check %v", n, len(plan.NodeClaims),
				len(plan.Unschedulable), len(v), solve.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestMixedWorkloadSeeds checks small draws of the benchmark's mix (60 of them: 30 to 400 pods, twelve seeds each).
// At these sizes the improvement pass and the zone post-pass change most plans, which the random cases above rarely
// make them do.
func TestMixedWorkloadSeeds(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{30, 60, 120, 250, 400} {
		for seed := int64(1); seed <= 12; seed++ {
			t.Run(fmt.Sprintf("%d-pods-seed-%d", n, seed), func(t *testing.T) {
				snap := scheduletest.MixedSnapshot(n, seed)
				plan, err := scheduling.Solve(ctx, snap, scheduling.Options{})
				if err != nil {
					t.Fatal(err)
				}
				v, err := oracle.Check(ctx, snap, plan, oracle.Options{Order: n <= 120})
				if err != nil {
					t.Fatal(err)
				}
				reportViolations(t, v)
			})
		}
	}
}

// reportViolations fails t with the first ten violations and their number.
func reportViolations[V any](t *testing.T, v []V) {
	t.Helper()
	for i, x := range v {
		if i == 10 {
			break
		}
		t.Errorf("violation: %v", x)
	}
	if len(v) > 0 {
		t.Errorf("%d violations", len(v))
	}
}

func key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: name}
}

// place puts pending pods on nodes: name -> node.
func place(kv ...string) []scheduling.Placement {
	var out []scheduling.Placement
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, scheduling.Placement{Pod: key(kv[i]), Node: kv[i+1]})
	}
	return out
}

func zoneNode(name, zone string) *test.SchedNodeBuilder {
	return test.SchedNode(name, "4", "16Gi").Zone(zone)
}

func boundPV(name, zone string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "pv-" + name}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}},
	}}
	return pvc, pv
}

// TestCheckFindsViolations feeds hand-made plans that break one constraint each (and one that breaks none) and
// expects the plugins that must refuse them.
func TestCheckFindsViolations(t *testing.T) {
	web := func(name string) *test.SchedPodBuilder {
		return test.SchedPod(name).Requests("1", "1Gi").Labels("app", "web")
	}
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	zonal := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{"a"}}}}}}
	pvcA, pvA := boundPV("data-a", "a")
	pvcB, pvB := boundPV("data-b", "a")
	it := test.SchedInstanceType("small.large", "2", "4Gi").Overhead("100m", "256Mi").Offering("a", cloudprovider.CapacityTypeOnDemand, 0.1).Obj()
	big := test.SchedInstanceType("big.xlarge", "4", "16Gi").Offering("a", cloudprovider.CapacityTypeSpot, 0.05).
		Offering("b", cloudprovider.CapacityTypeSpot, 0.05).Obj()
	pool := test.SchedNodePool("default").Taint("team", "x", corev1.TaintEffectNoSchedule).Obj()
	tests := []struct {
		name  string
		snap  *scheduling.Snapshot
		plan  *scheduling.Plan
		order bool
		want  []string // plugins of the violations, sorted, one per violation
	}{
		{
			name: "valid plan",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Obj(), web("w2").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
		},
		{
			name: "cpu overcommitted",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Requests("3", "1Gi").Obj(), web("w2").Requests("3", "1Gi").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
			want: []string{"NodeResourcesFit", "NodeResourcesFit"},
		},
		{
			name: "untolerated taint",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Taint("gpu", "", corev1.TaintEffectNoSchedule).Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1")},
			want: []string{"TaintToleration"},
		},
		{
			name: "node selector",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Zone("b").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1")},
			want: []string{"NodeAffinity"},
		},
		{
			name: "host port",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").HostPort(80).Obj(), web("w2").HostPort(80).Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
			want: []string{"NodePorts", "NodePorts"},
		},
		{
			name: "hostname anti-affinity",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").PodAntiAffinity(corev1.LabelHostname, "app", "web").Obj(),
				web("w2").Obj()}, Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
			// w1 refuses w2 beside it, and w2 may not join the anti-affine w1
			want: []string{"InterPodAffinity", "InterPodAffinity"},
		},
		{
			name: "zone spread skew",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").ZoneSpread(1, "app", "web").Obj(), web("w2").ZoneSpread(1, "app", "web").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj(), zoneNode("n2", "b").Obj()}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
			want: []string{"PodTopologySpread", "PodTopologySpread"},
		},
		{
			name: "bound volume in another zone",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").PVC("data-a").Obj()},
				Nodes:                  []*scheduling.StateNode{zoneNode("n1", "b").Obj()},
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{pvcA}, PersistentVolumes: []*corev1.PersistentVolume{pvA}},
			plan: &scheduling.Plan{Placements: place("w1", "n1")},
			want: []string{"VolumeBinding"},
		},
		{
			name: "storage class topology",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").PVC("fresh").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "b").Obj()},
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fresh"},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("zonal")}}},
				StorageClasses: []*storagev1.StorageClass{zonal}},
			plan: &scheduling.Plan{Placements: place("w1", "n1")},
			want: []string{"VolumeBinding"},
		},
		{
			name: "volume attach limit",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").PVC("data-a").Obj(), web("w2").PVC("data-b").Obj()},
				Nodes:                  []*scheduling.StateNode{zoneNode("n1", "a").VolumeLimit("ebs.csi.aws.com", 1).Obj()},
				PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{pvcA, pvcB}, PersistentVolumes: []*corev1.PersistentVolume{pvA, pvB}},
			plan: &scheduling.Plan{Placements: place("w1", "n1", "w2", "n1")},
			want: []string{"NodeVolumeLimits", "NodeVolumeLimits"},
		},
		{
			name: "new node too small after overhead, NodePool taint untolerated",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Requests("2", "1Gi").Obj()},
				NodePools: []*scheduling.NodePool{pool}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": {it}}},
			plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{{Name: "default-1", NodePool: "default", Taints: pool.Taints,
				InstanceType: it.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeOnDemand, Price: 0.1, Pods: []types.NamespacedName{key("w1")},
				InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: it.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeOnDemand, Price: 0.1}}}}},
			want: []string{"NodeResourcesFit", "TaintToleration"},
		},
		{
			name: "every option fits",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Requests("1500m", "1Gi").Obj()},
				NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": {it, big}}},
			plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{{Name: "default-1", NodePool: "default",
				InstanceType: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05, Pods: []types.NamespacedName{key("w1")},
				InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05},
					{Name: it.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeOnDemand, Price: 0.1}}}}},
			// small.large keeps 1900m cpu after overhead; big may launch in zone a or b: the pod fits everywhere
			want: nil,
		},
		{
			name: "an offering outside the pod's zone",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Zone("a").Obj()},
				NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": {big}}},
			plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{{Name: "default-1", NodePool: "default",
				InstanceType: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05, Pods: []types.NamespacedName{key("w1")},
				InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05}}}}},
			// the claim does not narrow the zone: CreateFleet may launch big in zone b
			want: []string{"NodeAffinity"},
		},
		{
			name: "the claim narrows the zone",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Zone("a").Obj()},
				NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": {big}}},
			plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{{Name: "default-1", NodePool: "default",
				InstanceType: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05, Pods: []types.NamespacedName{key("w1")},
				Requirements:        []scheduling.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: test.NodeRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")}},
				InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05}}}}},
		},
		{
			name: "a cheaper option too small",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Requests("3", "1Gi").Obj()},
				NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": {it, big}}},
			plan: &scheduling.Plan{NodeClaims: []*scheduling.NodeClaimPlan{{Name: "default-1", NodePool: "default",
				InstanceType: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05, Pods: []types.NamespacedName{key("w1")},
				Requirements: []scheduling.NodeSelectorRequirementWithMinValues{{NodeSelectorRequirement: test.NodeRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")}},
				InstanceTypeOptions: []scheduling.InstanceTypeOption{{Name: big.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeSpot, Price: 0.05},
					{Name: it.Name, Zone: "a", CapacityType: cloudprovider.CapacityTypeOnDemand, Price: 0.1}}}}},
			// launched as small.large the pod's 3 cpu do not fit
			want: []string{"NodeResourcesFit"},
		},
		{
			name: "mutual pod affinity, each as if scheduled last",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{test.SchedPod("a").Labels("app", "a").PodAffinity(corev1.LabelTopologyZone, "app", "b").Obj(),
				test.SchedPod("b").Labels("app", "b").PodAffinity(corev1.LabelTopologyZone, "app", "a").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan: &scheduling.Plan{Placements: place("a", "n1", "b", "n1")},
		},
		{
			name: "mutual pod affinity has no binding order",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{test.SchedPod("a").Labels("app", "a").PodAffinity(corev1.LabelTopologyZone, "app", "b").Obj(),
				test.SchedPod("b").Labels("app", "b").PodAffinity(corev1.LabelTopologyZone, "app", "a").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan:  &scheduling.Plan{Placements: place("a", "n1", "b", "n1")},
			order: true,
			want:  []string{"InterPodAffinity", "InterPodAffinity"},
		},
		{
			name: "affinity to a pod of the same plan binds after it",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{test.SchedPod("a").Labels("app", "a").PodAffinity(corev1.LabelTopologyZone, "app", "b").Obj(),
				test.SchedPod("b").Labels("app", "b").Obj()},
				Nodes: []*scheduling.StateNode{zoneNode("n1", "a").Obj()}},
			plan:  &scheduling.Plan{Placements: place("a", "n1", "b", "n1")},
			order: true,
		},
		{
			name: "pod left out of the plan",
			snap: &scheduling.Snapshot{Pods: []*corev1.Pod{web("w1").Obj()}},
			plan: &scheduling.Plan{},
			want: []string{"Plan"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := oracle.Check(context.Background(), tc.snap, tc.plan, oracle.Options{EveryOption: true, Order: tc.order})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range v {
				got = append(got, x.Plugin)
			}
			sort.Strings(got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("violations (-want +got):\n%s\nall: %v", d, fmt.Sprint(v))
			}
		})
	}
}

// TestPlaceable expects exactly the pods reported unschedulable that fit a node of the plan's cluster.
func TestPlaceable(t *testing.T) {
	snap := &scheduling.Snapshot{
		Pods: []*corev1.Pod{test.SchedPod("api").Requests("1", "1Gi").Labels("app", "api").Obj(),
			test.SchedPod("web").Requests("1", "1Gi").PodAffinity(corev1.LabelTopologyZone, "app", "api").Obj(),
			test.SchedPod("db").Requests("1", "1Gi").PodAffinity(corev1.LabelTopologyZone, "app", "cache").Obj(),
			test.SchedPod("big").Requests("16", "1Gi").Obj()},
		Nodes: []*scheduling.StateNode{zoneNode("n1", "b").Obj()},
	}
	plan := &scheduling.Plan{Placements: place("api", "n1"), Unschedulable: []scheduling.PodError{
		{Pod: key("web"), Reason: "no"}, {Pod: key("db"), Reason: "no"}, {Pod: key("big"), Reason: "no"}}}
	if v, err := oracle.Check(context.Background(), snap, plan, oracle.Options{Order: true}); err != nil || len(v) > 0 {
		t.Fatalf("Check = %v, %v; want no violations", v, err)
	}
	v, err := oracle.Placeable(context.Background(), snap, plan)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range v {
		got = append(got, x.Pod+" on "+x.Node)
	}
	if d := cmp.Diff([]string{"default/web on n1"}, got); d != "" {
		t.Errorf("placeable (-want +got):\n%s", d)
	}
}
