package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/oracle"
	"github.com/dovetail/dovetail/pkg/test"
)

// wcCatalog is small/medium/large (2/4/8 cpu, 8/16/32Gi, $0.1/0.2/0.4 on-demand) in zones a and b.
func wcCatalog() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, s := range []struct {
		name, cpu, mem string
		price          float64
	}{{"small", "2", "8Gi", 0.1}, {"medium", "4", "16Gi", 0.2}, {"large", "8", "32Gi", 0.4}} {
		out = append(out, test.SchedInstanceType(s.name, s.cpu, s.mem).
			Offering("a", karpv1.CapacityTypeOnDemand, s.price).Offering("b", karpv1.CapacityTypeOnDemand, s.price).Obj())
	}
	return out
}

// wcNode is a candidate of the given type and zone with pods.
type wcNode struct {
	name, size, zone string
	pods             []*corev1.Pod
	edit             func(b *test.CandidateBuilder)
}

// wcWorld is a snapshot whose nodes are all candidates of NodePool "default" (the pool given, or a plain one).
func wcWorld(pool *karpv1.NodePool, nodes ...wcNode) *disruption.Snapshot {
	if pool == nil {
		pool = test.NodePool("default").Obj()
	}
	types := wcCatalog()
	price := map[string]float64{"small": 0.1, "medium": 0.2, "large": 0.4}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	snap := &disruption.Snapshot{
		Now: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		Cluster: &scheduling.Snapshot{NodePools: []*scheduling.NodePool{test.SchedNodePool(pool.Name).Obj()},
			InstanceTypes: map[string][]*cloudprovider.InstanceType{pool.Name: types}},
		NodePools:  map[string]*karpv1.NodePool{pool.Name: pool},
		NodeCounts: map[string]int{pool.Name: len(nodes)},
	}
	for _, n := range nodes {
		b := test.Candidate(n.name, n.size, price[n.size]).Pods(n.pods...)
		b.Obj().Zone = n.zone
		if n.edit != nil {
			n.edit(b)
		}
		c := b.Obj()
		it := byName[n.size]
		sn := test.SchedNode(n.name, it.Capacity.Cpu().String(), it.Capacity.Memory().String()).Zone(n.zone).
			Label(corev1.LabelInstanceTypeStable, n.size).Label(karpv1.CapacityTypeLabelKey, c.CapacityType).
			Label(karpv1.NodePoolLabelKey, pool.Name).Pods(n.pods...).Obj()
		sn.NodePool = pool.Name
		snap.Cluster.Nodes = append(snap.Cluster.Nodes, sn)
		snap.Candidates = append(snap.Candidates, c)
	}
	return snap
}

func wcPod(name, app, cpu string) *corev1.Pod {
	return test.SchedPod(name).Labels("app", app).Requests(cpu, "1Gi").Obj()
}

// verifyPlan replays the plan's commands in order on the snapshot's cluster, each one as if the controller stopped
// after it: the command's candidates leave, its replacements join, and its pods must all be placed on the cluster
// as the commands before it left it, with no other new node, by a plan the oracle finds valid. It returns what
// breaks.
func verifyPlan(snap *disruption.Snapshot, plan *disruption.WholeClusterPlan) []string {
	var out []string
	nodes := append([]*scheduling.StateNode(nil), snap.Cluster.Nodes...)
	for k, cmd := range plan.Commands {
		if cmd.Plan != plan.ID {
			out = append(out, fmt.Sprintf("command %d carries plan %q, not %q", k, cmd.Plan, plan.ID))
		}
		gone := map[string]bool{}
		var pending []*corev1.Pod
		for _, c := range cmd.Candidates {
			gone[c.Node] = true
		}
		var kept []*scheduling.StateNode
		for _, n := range nodes {
			if !gone[n.Name] {
				kept = append(kept, n)
				continue
			}
			for _, p := range n.Pods {
				if disruption.Reschedulable(p) {
					q := p.DeepCopy()
					q.Spec.NodeName = ""
					pending = append(pending, q)
				}
			}
		}
		if len(gone) != len(cmd.Candidates) {
			out = append(out, fmt.Sprintf("command %d names a candidate twice", k))
		}
		for i, r := range cmd.Replacements {
			n := disruption.PlannedNode(snap.Cluster, r, fmt.Sprintf("verify-%d-%d", k, i), nil)
			n.InFlight = true
			kept = append(kept, n)
		}
		cluster := *snap.Cluster
		cluster.Nodes, cluster.Pods = kept, pending
		p, err := scheduling.Solve(context.Background(), &cluster, scheduling.Options{Bound: scheduling.BoundNone})
		if err != nil {
			return append(out, fmt.Sprintf("command %d: %v", k, err))
		}
		for _, u := range p.Unschedulable {
			out = append(out, fmt.Sprintf("command %d (%s) leaves pod %s unschedulable: %s", k, cmd.Message(), u.Pod, u.Reason))
		}
		if len(p.NodeClaims) > 0 {
			out = append(out, fmt.Sprintf("command %d (%s) needs %d more new node(s)", k, cmd.Message(), len(p.NodeClaims)))
		}
		for _, v := range oracle.Check(&cluster, p) {
			out = append(out, fmt.Sprintf("command %d: oracle: %s", k, v))
		}
		index := map[string]int{}
		for i, n := range kept {
			index[n.Name] = i
		}
		byName := map[string]*corev1.Pod{}
		for _, q := range pending {
			byName[q.Namespace+"/"+q.Name] = q
		}
		for _, pl := range p.Placements {
			i := index[pl.Node]
			n := *kept[i]
			q := byName[pl.Pod.String()].DeepCopy()
			q.Spec.NodeName = n.Name
			n.Pods = append(append([]*corev1.Pod(nil), n.Pods...), q)
			kept[i] = &n
		}
		nodes = kept
	}
	return out
}

func pdbFor(app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestWholeCluster(t *testing.T) {
	spread := func(name string) *corev1.Pod {
		return test.SchedPod(name).Labels("app", "spread").Requests("1", "1Gi").ZoneSpread(1, "app", "spread").Obj()
	}
	anti := func(name string) *corev1.Pod {
		return test.SchedPod(name).Labels("app", "solo").Requests("500m", "1Gi").PodAntiAffinity(corev1.LabelHostname, "app", "solo").Obj()
	}
	cases := []struct {
		name string
		snap func() *disruption.Snapshot
		// maxNodes caps the candidates of all commands; minSavings is what the plan must save at least.
		maxNodes   int
		minSavings float64
		// never are nodes no command may name; pdbApp with pdbMax caps the plan's evictions of that app.
		never  []string
		pdbApp string
		pdbMax int
	}{
		{
			name: "eight half-empty large nodes are packed",
			snap: func() *disruption.Snapshot {
				var ns []wcNode
				for i := 0; i < 8; i++ {
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a",
						pods: []*corev1.Pod{wcPod(fmt.Sprintf("p%d-a", i), "web", "1"), wcPod(fmt.Sprintf("p%d-b", i), "api", "1500m")}})
				}
				return wcWorld(nil, ns...)
			},
			maxNodes: 8, minSavings: 1.2,
		},
		{
			name: "hostname anti-affinity pods never share a node",
			snap: func() *disruption.Snapshot {
				var ns []wcNode
				for i := 0; i < 4; i++ {
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{anti(fmt.Sprintf("solo-%d", i))}})
				}
				ns = append(ns, wcNode{name: "roomy", size: "large", zone: "a", pods: []*corev1.Pod{wcPod("big", "db", "4")}})
				return wcWorld(nil, ns...)
			},
			maxNodes: 5, minSavings: 0.9,
		},
		{
			name: "zone spread holds on every step",
			snap: func() *disruption.Snapshot {
				var ns []wcNode
				for i := 0; i < 6; i++ {
					z := []string{"a", "b"}[i%2]
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: z,
						pods: []*corev1.Pod{spread(fmt.Sprintf("s%d", i)), wcPod(fmt.Sprintf("w%d", i), "web", "500m")}})
				}
				return wcWorld(nil, ns...)
			},
			maxNodes: 6, minSavings: 0.8,
		},
		{
			name: "a PodDisruptionBudget allowing one disruption bounds the whole pass",
			snap: func() *disruption.Snapshot {
				var ns []wcNode
				for i := 0; i < 6; i++ {
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{wcPod(fmt.Sprintf("web-%d", i), "web", "1")}})
				}
				s := wcWorld(nil, ns...)
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{pdbFor("web", 1)}
				return s
			},
			maxNodes: 1, minSavings: 0.4, pdbApp: "web", pdbMax: 1,
		},
		{
			name: "do-not-disrupt and recently changed nodes stay out of the plan",
			snap: func() *disruption.Snapshot {
				precious := wcPod("precious", "web", "1")
				precious.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
				var ns []wcNode
				for i := 0; i < 5; i++ {
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{wcPod(fmt.Sprintf("w%d", i), "web", "1")}})
				}
				ns = append(ns, wcNode{name: "keep", size: "large", zone: "a", pods: []*corev1.Pod{precious}},
					wcNode{name: "fresh", size: "large", zone: "a", pods: []*corev1.Pod{wcPod("new", "web", "1")},
						edit: func(b *test.CandidateBuilder) { b.NotConsolidatable() }})
				return wcWorld(nil, ns...)
			},
			maxNodes: 5, minSavings: 1.2, never: []string{"keep", "fresh"},
		},
		{
			name: "a budget of two nodes caps the plan",
			snap: func() *disruption.Snapshot {
				var ns []wcNode
				for i := 0; i < 6; i++ {
					ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{wcPod(fmt.Sprintf("w%d", i), "web", "1")}})
				}
				return wcWorld(test.NodePool("default").Budget("2").Obj(), ns...)
			},
			maxNodes: 2, minSavings: 0.8,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := tc.snap()
			res, err := disruption.Decide(context.Background(), snap, disruption.Options{WholeCluster: true})
			if err != nil {
				t.Fatal(err)
			}
			plan := res.WholeCluster
			if plan == nil {
				t.Fatalf("no whole-cluster plan; command %v, stays %v", res.Command, res.Stays)
			}
			if len(plan.Commands) == 0 {
				t.Fatalf("the plan has no command (current $%.2f/h, target $%.2f/h); stays %v", plan.CurrentCost, plan.TargetCost, res.Stays)
			}
			if res.Command != plan.Commands[0] {
				t.Errorf("the pass's command is not the plan's first")
			}
			for _, v := range verifyPlan(snap, plan) {
				t.Error(v)
			}
			nodes, evicted := 0, 0
			for _, cmd := range plan.Commands {
				nodes += len(cmd.Candidates)
				if cmd.Savings <= 0 {
					t.Errorf("command %s saves nothing", cmd.Message())
				}
				for _, c := range cmd.Candidates {
					for _, n := range tc.never {
						if c.Node == n {
							t.Errorf("command %s disrupts %s", cmd.Message(), n)
						}
					}
					for _, p := range c.Pods {
						if tc.pdbApp != "" && p.Labels["app"] == tc.pdbApp {
							evicted++
						}
					}
				}
			}
			if nodes > tc.maxNodes {
				t.Errorf("the plan disrupts %d nodes, more than %d", nodes, tc.maxNodes)
			}
			if plan.Savings < tc.minSavings-1e-9 {
				t.Errorf("the plan saves $%.4f/h, less than $%.4f/h", plan.Savings, tc.minSavings)
			}
			if tc.pdbApp != "" && evicted > tc.pdbMax {
				t.Errorf("the plan evicts %d pods of %s, its PodDisruptionBudget allows %d", evicted, tc.pdbApp, tc.pdbMax)
			}
		})
	}
}

// TestWholeClusterVerifierCatchesUnsafePlans checks that verifyPlan fails a plan that strands pods, so the table
// above can fail.
func TestWholeClusterVerifierCatchesUnsafePlans(t *testing.T) {
	snap := wcWorld(nil, wcNode{name: "n0", size: "small", zone: "a", pods: []*corev1.Pod{wcPod("a", "web", "1500m")}},
		wcNode{name: "n1", size: "small", zone: "a", pods: []*corev1.Pod{wcPod("b", "web", "1500m")}})
	bad := &disruption.WholeClusterPlan{ID: "p", Commands: []*disruption.Command{
		{Plan: "p", Decision: disruption.DecisionDelete, Candidates: []*disruption.Candidate{snap.Candidates[0]}},
	}}
	if v := verifyPlan(snap, bad); len(v) == 0 {
		t.Fatal("deleting a node whose pod fits nowhere else passed verification")
	}
}

// TestWholeClusterIsOff checks that Decide leaves the whole-cluster search out unless asked.
func TestWholeClusterIsOff(t *testing.T) {
	var ns []wcNode
	for i := 0; i < 3; i++ {
		ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{wcPod(fmt.Sprintf("w%d", i), "web", "1")}})
	}
	res, err := disruption.Decide(context.Background(), wcWorld(nil, ns...), disruption.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.WholeCluster != nil || (res.Command != nil && res.Command.ConsolidationType == disruption.ConsolidationWhole) {
		t.Errorf("the whole-cluster search ran without Options.WholeCluster")
	}
}

// TestWholeClusterMinCandidates checks that the search leaves clusters with fewer underutilized nodes than
// Options.WholeClusterMinCandidates to multi- and single-node consolidation, and runs at the threshold.
func TestWholeClusterMinCandidates(t *testing.T) {
	var ns []wcNode
	for i := 0; i < 3; i++ {
		ns = append(ns, wcNode{name: fmt.Sprintf("n%d", i), size: "large", zone: "a", pods: []*corev1.Pod{wcPod(fmt.Sprintf("w%d", i), "web", "1")}})
	}
	for _, tc := range []struct {
		min  int
		runs bool
	}{{min: 0, runs: true}, {min: 3, runs: true}, {min: 4, runs: false}} {
		res, err := disruption.Decide(context.Background(), wcWorld(nil, ns...), disruption.Options{WholeCluster: true, WholeClusterMinCandidates: tc.min})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.WholeCluster != nil; got != tc.runs {
			t.Errorf("WholeClusterMinCandidates %d with 3 candidates: search ran = %t, want %t", tc.min, got, tc.runs)
		}
		if !tc.runs && len(res.Commands) == 0 {
			t.Errorf("WholeClusterMinCandidates %d: no command, want multi- or single-node consolidation to find one", tc.min)
		}
	}
}

// TestWholeClusterSettled checks that a cluster already as cheap as the cheapest plan gets no command from any
// consolidation method, and says why.
func TestWholeClusterSettled(t *testing.T) {
	snap := wcWorld(nil,
		wcNode{name: "n0", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("a", "web", "3")}},
		wcNode{name: "n1", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("b", "web", "3")}})
	res, err := disruption.Decide(context.Background(), snap, disruption.Options{WholeCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Command != nil {
		t.Errorf("a settled cluster got a command: %s", res.Command.Message())
	}
	if res.WholeCluster == nil || !res.WholeCluster.Settled {
		t.Fatalf("the whole-cluster plan is not settled: %+v", res.WholeCluster)
	}
	for _, s := range res.Stays {
		if s.Reason != disruption.StayNoCheaper || !strings.Contains(s.Message, "cheapest plan") {
			t.Errorf("stay of %s: %s %q, want NoCheaper naming the cheapest plan", s.NodeClaim, s.Reason, s.Message)
		}
	}
	// The message is the node's Unconsolidatable event, announced again whenever it changes: a settled node's
	// must not change when other nodes join the cluster.
	bigger := wcWorld(nil,
		wcNode{name: "n0", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("a", "web", "3")}},
		wcNode{name: "n1", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("b", "web", "3")}},
		wcNode{name: "n2", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("c", "web", "3")}})
	res2, err := disruption.Decide(context.Background(), bigger, disruption.Options{WholeCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	message := func(r *disruption.Result, claim string) string {
		for _, s := range r.Stays {
			if s.NodeClaim == claim {
				return s.Message
			}
		}
		return ""
	}
	if a, b := message(res, "n0"), message(res2, "n0"); a == "" || a != b {
		t.Errorf("n0's stay message changed with another node in the cluster: %q, then %q", a, b)
	}
}

// TestWholeClusterKeepsACandidate: the cheapest plan for the pods of big, m1 and m2 is one large node, the type
// big runs as. Launching it would evict big's pod too and bill a new node for what big already is: big stays, m1
// and m2 are deleted and their pods go onto it (no launch, 4 evictions rather than 5, the same saving).
func TestWholeClusterKeepsACandidate(t *testing.T) {
	snap := wcWorld(nil,
		wcNode{name: "big", size: "large", zone: "a", pods: []*corev1.Pod{wcPod("batch", "batch", "3")}},
		wcNode{name: "m1", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("web-1", "web", "1"), wcPod("web-2", "web", "1")}},
		wcNode{name: "m2", size: "medium", zone: "a", pods: []*corev1.Pod{wcPod("api-1", "api", "1"), wcPod("api-2", "api", "1")}})
	res, err := disruption.Decide(context.Background(), snap, disruption.Options{WholeCluster: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.WholeCluster == nil || len(res.WholeCluster.Commands) != 1 {
		t.Fatalf("whole-cluster plan %+v, want one command", res.WholeCluster)
	}
	cmd := res.WholeCluster.Commands[0]
	if got, want := cmd.Message(), "underutilized/delete (whole-cluster): 2 node(s) m1, m2, saving $0.4000/h"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if res.Evictions != 4 {
		t.Errorf("%d evictions, want 4 (the pods of m1 and m2, each once)", res.Evictions)
	}
	var stay *disruption.Stay
	for i := range res.Stays {
		if res.Stays[i].NodeClaim == "big" {
			stay = &res.Stays[i]
		}
	}
	if stay == nil || stay.Reason != disruption.StayReceiving {
		t.Errorf("big's stay = %+v, want %s", stay, disruption.StayReceiving)
	}
	for _, v := range verifyPlan(snap, res.WholeCluster) {
		t.Error(v)
	}
}
