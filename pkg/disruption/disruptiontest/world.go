package disruptiontest

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// PoolName is the NodePool of the scaled-in world.
const PoolName = "default"

// Epoch is the snapshot time of the scaled-in world.
var Epoch = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// ScaledIn returns the benchmark's scaled-in cluster: count pods of the scheduling benchmark mix (test.DiversePods,
// seed 42) placed by the provisioning scheduler onto new nodes of one NodePool (spot and on-demand, linux) against
// test.BenchmarkInstanceTypes, turned into a disruption snapshot (every node an initialized, consolidatable
// candidate; the NodePool allows 100% of its nodes for Empty and 10% for Underutilized and Drifted), then the given
// fraction of the pods removed at random (seed). The mix's hostname anti-affinity pods are split in two groups
// (app=nginx and app=nginx-b, each repelling its own group) so that 20,000 pods need 2,000 nodes instead of 4,000,
// at the ten pods per node of a typical cluster, and the NodePool asks for instance types of 8 vCPU or more
// (karpenter.k8s.aws/instance-cpu Gt 7; with every size 20,000 pods take 2,002 nodes); everything else is the
// scheduling benchmark's mix.
func ScaledIn(ctx context.Context, count int, remove float64, seed int64) (*disruption.Snapshot, error) {
	pods := test.DiversePods(count, 42)
	half := 0
	for _, p := range pods {
		if p.Labels["app"] != "nginx" {
			continue
		}
		if half++; half%2 == 0 {
			p.Labels["app"] = "nginx-b"
			for i := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i]
				t.LabelSelector.MatchLabels = map[string]string{"app": "nginx-b"}
			}
		}
	}
	np := test.SchedNodePool(PoolName).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").Obj()
	{ // 8 vCPU and more, as many production NodePools ask: 20,000 pods then take exactly 2,000 nodes
		np.Requirements = append(np.Requirements, scheduling.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
			Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"7"}}})
	}
	return place(ctx, pods, np, BenchmarkNodePool(), remove, seed)
}

// ScaledInBasic returns the cluster of the "basic" workload of Karpenter's performance suite after its scale-in:
// each pods of 0.9 cpu / 3.1Gi and each of 3.5 cpu / 28Gi placed by the provisioning scheduler onto new nodes of one
// NodePool (spot and on-demand, linux, up to 4 vCPU of test.BenchmarkInstanceTypes), then the given fraction of the
// pods removed at random (seed). The NodePool allows 100% of its nodes for every reason, as the suite's does.
func ScaledInBasic(ctx context.Context, each int, remove float64, seed int64) (*disruption.Snapshot, error) {
	var pods []*corev1.Pod
	for i := range each {
		pods = append(pods,
			test.SchedPod(fmt.Sprintf("small-%04d", i)).Labels("app", "small").Requests("900m", "3174Mi").Obj(),
			test.SchedPod(fmt.Sprintf("large-%04d", i)).Labels("app", "large").Requests("3500m", "28Gi").Obj())
	}
	np := test.SchedNodePool(PoolName).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").Obj()
	{ // up to 4 vCPU: a node per large pod, as the simulator's prices make it on the local stack
		np.Requirements = append(np.Requirements, scheduling.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: corev1.NodeSelectorRequirement{
			Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}}})
	}
	pool := test.NodePool(PoolName).Budget("100%").Obj()
	pool.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("30s")
	return place(ctx, pods, np, pool, remove, seed)
}

// Packed returns bench-scale's base cluster at rest: nodes m5.xlarge on-demand nodes of one NodePool (which allows
// only those), each holding ten pods of 370m and 1Gi from 50 apps (an eleventh does not fit), every node an
// initialized, consolidatable candidate of a NodePool with the budgets of BenchmarkNodePool. No node can go and
// none has a cheaper replacement: a decision examines every one of them and finds nothing to do.
func Packed(ctx context.Context, nodes int) (*disruption.Snapshot, error) {
	const apps, perNode = 50, 10
	pods := make([]*corev1.Pod, 0, nodes*perNode)
	for i := range nodes * perNode {
		app := fmt.Sprintf("app-%02d", i%apps)
		pods = append(pods, test.SchedPod(fmt.Sprintf("%s-%05d", app, i/apps)).Labels("app", app).Requests("370m", "1Gi").Obj())
	}
	np := test.SchedNodePool(PoolName).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge").Obj()
	snap, err := place(ctx, pods, np, BenchmarkNodePool(), 0, 0)
	if err != nil {
		return nil, err
	}
	if len(snap.Candidates) != nodes {
		return nil, fmt.Errorf("packing %d pods: %d nodes, want %d", len(pods), len(snap.Candidates), nodes)
	}
	return snap, nil
}

// place plans pods onto new nodes of the NodePool np against test.BenchmarkInstanceTypes and returns the disruption
// snapshot of that cluster (pool is np's NodePool object; every node an initialized, consolidatable candidate) after
// removing the given fraction of the pods at random (seed).
func place(ctx context.Context, pods []*corev1.Pod, np *scheduling.NodePool, pool *karpv1.NodePool, remove float64, seed int64) (*disruption.Snapshot, error) {
	cluster := &scheduling.Snapshot{
		NodePools:     []*scheduling.NodePool{np},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{PoolName: test.BenchmarkInstanceTypes()},
	}
	placing := *cluster
	placing.Pods = pods
	plan, err := scheduling.Solve(ctx, &placing, scheduling.Options{Bound: scheduling.BoundNone})
	if err != nil {
		return nil, fmt.Errorf("placing the benchmark mix: %w", err)
	}
	if len(plan.Unschedulable) > 0 {
		return nil, fmt.Errorf("placing the benchmark mix: %d pods unschedulable, first %s: %s", len(plan.Unschedulable),
			plan.Unschedulable[0].Pod, plan.Unschedulable[0].Reason)
	}
	byKey := make(map[types.NamespacedName]*corev1.Pod, len(pods))
	for _, p := range pods {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	// remove a seeded random share of the pods
	r := rand.New(rand.NewSource(seed))
	gone := map[types.NamespacedName]bool{}
	for _, i := range r.Perm(len(pods))[:int(float64(len(pods))*remove)] {
		gone[types.NamespacedName{Namespace: pods[i].Namespace, Name: pods[i].Name}] = true
	}
	snap := &disruption.Snapshot{
		Now:        Epoch,
		Cluster:    cluster,
		NodePools:  map[string]*karpv1.NodePool{PoolName: pool},
		NodeCounts: map[string]int{},
		Disrupting: map[string]int{},
	}
	for i, nc := range plan.NodeClaims {
		var bound []*corev1.Pod
		for _, key := range nc.Pods {
			if !gone[key] {
				bound = append(bound, byKey[key])
			}
		}
		name := fmt.Sprintf("node-%05d", i)
		sn, cand := Launch(cluster, nc, name, Epoch.Add(-time.Hour), bound)
		cluster.Nodes = append(cluster.Nodes, sn)
		snap.Candidates = append(snap.Candidates, cand)
		snap.NodeCounts[PoolName]++
	}
	return snap, nil
}

// BenchmarkNodePool is the NodePool of the scaled-in world: consolidateAfter 30s, WhenEmptyOrUnderutilized, a
// budget of 100% for Empty and 10% for Underutilized and Drifted.
func BenchmarkNodePool() *karpv1.NodePool {
	np := test.NodePool(PoolName).
		Budget("100%", karpv1.DisruptionReasonEmpty).
		Budget("10%", karpv1.DisruptionReasonUnderutilized, karpv1.DisruptionReasonDrifted).Obj()
	np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("30s")
	return np
}

// Launch turns a planned NodeClaim into the registered, initialized node it becomes (its cheapest option) with
// pods bound to it, and the candidate describing it.
func Launch(cluster *scheduling.Snapshot, nc *scheduling.NodeClaimPlan, name string, created time.Time, pods []*corev1.Pod) (*scheduling.StateNode, *disruption.Candidate) {
	sn := disruption.PlannedNode(cluster, nc, name, pods)
	bound := sn.Pods
	cand := &disruption.Candidate{
		NodeClaim: name, Node: name, NodePool: nc.NodePool, InstanceType: nc.InstanceType, Zone: nc.Zone, CapacityType: nc.CapacityType,
		Price: nc.Price, Pods: bound, Initialized: true, Consolidatable: true, CreatedAt: created,
	}
	return sn, cand
}
