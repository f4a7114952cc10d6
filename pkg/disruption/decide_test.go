package disruption_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// catalog is the instance types every case may launch: each size doubles cpu, memory and price; spot costs
// 60 % of on-demand.
func catalog() []*cloudprovider.InstanceType {
	sizes := []struct {
		name, cpu, mem string
		price, spot    float64
	}{{"small", "2", "8Gi", 0.1, 0.06}, {"medium", "4", "16Gi", 0.2, 0.12}, {"large", "8", "32Gi", 0.4, 0.24}}
	var out []*cloudprovider.InstanceType
	for _, s := range sizes {
		out = append(out, test.SchedInstanceType(s.name, s.cpu, s.mem).
			Offering("a", karpv1.CapacityTypeOnDemand, s.price).Offering("a", karpv1.CapacityTypeSpot, s.spot).Obj())
	}
	return out
}

// world is a decision snapshot with the candidates as the cluster's only nodes, one NodePool "default" (as
// given, or a plain one) and the catalog.
func world(pool *karpv1.NodePool, cands ...*disruption.Candidate) *disruption.Snapshot {
	if pool == nil {
		pool = test.NodePool("default").Obj()
	}
	types := catalog()
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	cluster := &scheduling.Snapshot{
		NodePools:     []*scheduling.NodePool{test.SchedNodePool(pool.Name).Obj()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{pool.Name: types},
	}
	for _, c := range cands {
		it := byName[c.InstanceType]
		n := test.SchedNode(c.Node, it.Capacity.Cpu().String(), it.Capacity.Memory().String()).Zone(c.Zone).
			Label(corev1.LabelInstanceTypeStable, c.InstanceType).Label(karpv1.CapacityTypeLabelKey, c.CapacityType).
			Label(karpv1.NodePoolLabelKey, c.NodePool).Pods(c.Pods...).Obj()
		n.NodePool = c.NodePool
		cluster.Nodes = append(cluster.Nodes, n)
	}
	return &disruption.Snapshot{
		Now:        time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		Cluster:    cluster,
		Candidates: cands,
		NodePools:  map[string]*karpv1.NodePool{pool.Name: pool},
		NodeCounts: map[string]int{pool.Name: len(cands)},
	}
}

// onDemandOnly takes the spot offerings out of the snapshot's catalog (world builds a fresh one each time).
func onDemandOnly(s *disruption.Snapshot) *disruption.Snapshot {
	for _, types := range s.Cluster.InstanceTypes {
		for _, it := range types {
			it.Offerings = slices.DeleteFunc(it.Offerings, func(o cloudprovider.Offering) bool {
				return o.CapacityType != karpv1.CapacityTypeOnDemand
			})
		}
	}
	return s
}

func pod(name, cpu string) *corev1.Pod {
	return test.SchedPod(name).Labels("app", name).Requests(cpu, "1Gi").Obj()
}

// summary is what the cases compare: the command in one line and every stay's reason.
type summary struct {
	Command string
	Stays   map[string]disruption.StayReason
}

func summarize(r *disruption.Result) summary {
	s := summary{Stays: map[string]disruption.StayReason{}}
	if r.Command != nil {
		s.Command = r.Command.Message()
	}
	for _, st := range r.Stays {
		s.Stays[st.NodeClaim] = st.Reason
	}
	return s
}

func TestDecide(t *testing.T) {
	none := map[string]disruption.StayReason{}
	cases := []struct {
		name  string
		snap  func() *disruption.Snapshot
		opts  disruption.Options
		want  summary
		check func(t *testing.T, r *disruption.Result)
	}{
		{
			name: "an empty consolidatable node is deleted",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "medium", 0.2).Obj())
			},
			want: summary{Command: "empty/delete (empty): 1 node(s) a, saving $0.2000/h", Stays: none},
		},
		{
			name: "DaemonSet and static pods do not count: the node is empty",
			snap: func() *disruption.Snapshot {
				ds := pod("agent", "100m")
				ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "cni", UID: "u", Controller: ptrTrue()}}
				static := pod("static", "100m")
				static.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
				return world(nil, test.Candidate("a", "medium", 0.2).Pods(ds, static).Obj())
			},
			want: summary{Command: "empty/delete (empty): 1 node(s) a, saving $0.2000/h", Stays: none},
		},
		{
			name: "an empty node stays until consolidateAfter has passed",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "medium", 0.2).NotConsolidatable().Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayNotConsolidatable}},
		},
		{
			name: "a do-not-disrupt pod keeps its node; the empty one goes",
			snap: func() *disruption.Snapshot {
				p := pod("precious", "500m")
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
				return world(nil, test.Candidate("a", "large", 0.4).Pods(p).Obj(), test.Candidate("b", "medium", 0.2).Obj())
			},
			want: summary{Command: "empty/delete (empty): 1 node(s) b, saving $0.2000/h",
				Stays: map[string]disruption.StayReason{"a": disruption.StayDoNotDisrupt}},
			check: func(t *testing.T, r *disruption.Result) {
				for _, s := range r.Stays {
					if s.NodeClaim == "a" && !strings.Contains(s.Message, "pod default/precious") {
						t.Errorf("do-not-disrupt stay message %q does not name the pod", s.Message)
					}
				}
			},
		},
		{
			name: "a do-not-disrupt node stays even when drifted",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "medium", 0.2).Drifted(karpv1.ReasonNodePoolDrifted).
					NodeAnnotation(karpv1.DoNotDisruptAnnotationKey, "true").Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayDoNotDisrupt}},
		},
		{
			name: "a PodDisruptionBudget that allows nothing keeps the node",
			snap: func() *disruption.Snapshot {
				s := world(nil, test.Candidate("a", "large", 0.4).Pods(pod("web", "500m")).Obj())
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
				return s
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayPDB}},
		},
		{
			name: "a budget of 0 nodes blocks emptiness",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("0").Obj(), test.Candidate("a", "medium", 0.2).Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayBudget}},
		},
		{
			name: "a budget of 1 deletes one of two empty nodes (older first by name order)",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("1").Obj(),
					test.Candidate("a", "medium", 0.2).Obj(), test.Candidate("b", "medium", 0.2).Obj())
			},
			want: summary{Command: "empty/delete (empty): 1 node(s) a, saving $0.2000/h",
				Stays: map[string]disruption.StayReason{"b": disruption.StayBudget}},
		},
		{
			name: "an underutilized on-demand node is replaced by a cheaper node, spot allowed",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "large", 0.4).Pods(pod("web", "1500m")).Obj())
			},
			want: summary{Command: "underutilized/replace (single): 1 node(s) a, replaced by small, saving $0.3400/h", Stays: none},
			check: func(t *testing.T, r *disruption.Result) {
				opts := r.Command.Replacements[0].InstanceTypeOptions
				if len(opts) == 0 {
					t.Fatal("replacement without instance-type options")
				}
				for _, o := range opts {
					if o.Price >= 0.4 {
						t.Errorf("replacement option %+v is not cheaper than the $0.40/h candidate", o)
					}
				}
			},
		},
		{
			name: "two underutilized nodes whose pods fit on one cheaper node are replaced together",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "medium", 0.2).Pods(pod("web", "700m")).Obj(),
					test.Candidate("b", "medium", 0.2).Pods(pod("api", "700m")).Obj())
			},
			want: summary{Command: "underutilized/replace (multi): 2 node(s) a, b, replaced by small, saving $0.3400/h", Stays: none},
		},
		{
			name: "two half-used nodes whose pods fit on one node of their own type: one is deleted, nothing launched",
			snap: func() *disruption.Snapshot {
				return onDemandOnly(world(nil, test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).Obj(),
					test.Candidate("b", "medium", 0.2).Pods(pod("api", "1500m")).Obj()))
			},
			want: summary{Command: "underutilized/delete (single): 1 node(s) a, saving $0.2000/h",
				Stays: map[string]disruption.StayReason{"b": disruption.StayReceiving}},
		},
		{
			name: "nodes whose pods fit only on a node of a type one of them runs as: that one stays and takes the others' pods",
			snap: func() *disruption.Snapshot {
				// Cheapest to disrupt first: big (one pod), then m1 and m2. All of their pods need a large;
				// big is one, so m1 and m2 go onto it: no launch, and big's pod stays. Without that, the
				// cheapest move left is replacing big by a medium for its pod (a launch, saving less).
				return onDemandOnly(world(nil, test.Candidate("big", "large", 0.4).Pods(pod("batch", "3")).Obj(),
					test.Candidate("m1", "medium", 0.2).Pods(pod("web-1", "1"), pod("web-2", "1")).Obj(),
					test.Candidate("m2", "medium", 0.2).Pods(pod("api-1", "1"), pod("api-2", "1")).Obj()))
			},
			want: summary{Command: "underutilized/delete (multi): 2 node(s) m1, m2, saving $0.4000/h",
				Stays: map[string]disruption.StayReason{"big": disruption.StayReceiving}},
			check: func(t *testing.T, r *disruption.Result) {
				if r.Evictions != 4 {
					t.Errorf("%d evictions, want 4 (the pods of m1 and m2, each once)", r.Evictions)
				}
			},
		},
		{
			name: "a replacement of a candidate's type goes ahead when that candidate could not take the others' pods",
			snap: func() *disruption.Snapshot {
				// The pods of big and m1 need a medium (m1's type) besides m2's room: m1 could not take big's
				// 3-cpu pod, so the new medium does what no candidate can.
				return onDemandOnly(world(nil, test.Candidate("big", "large", 0.4).Pods(pod("batch", "3")).Obj(),
					test.Candidate("m1", "medium", 0.2).Pods(pod("web-1", "1"), pod("web-2", "1")).Obj(),
					test.Candidate("m2", "medium", 0.2).Pods(pod("api-1", "1"), pod("api-2", "1")).NotConsolidatable().Obj()))
			},
			want: summary{Command: "underutilized/replace (multi): 2 node(s) big, m1, replaced by medium, saving $0.4000/h",
				Stays: map[string]disruption.StayReason{"m2": disruption.StayNotConsolidatable}},
		},
		{
			name: "several nodes go to one replacement only when it is cheaper than every candidate of its type",
			snap: func() *disruption.Snapshot {
				// small, medium and large all fit the three pods; small is what c runs as, at $0.10/h: a
				// replacement of that type or a dearer one would only move c's pods, so none is launched,
				// and the longest prefix that works is a and b, deleted, their pods onto c.
				return onDemandOnly(world(nil, test.Candidate("a", "large", 0.4).Pods(pod("web", "300m")).Obj(),
					test.Candidate("b", "large", 0.4).Pods(pod("api", "300m")).Obj(),
					test.Candidate("c", "small", 0.1).Pods(pod("db", "300m")).Obj()))
			},
			want: summary{Command: "underutilized/delete (multi): 2 node(s) a, b, saving $0.8000/h",
				Stays: map[string]disruption.StayReason{"c": disruption.StayReceiving}},
		},
		{
			name: "a node whose pods fit on another node is deleted (onto a do-not-disrupt node)",
			snap: func() *disruption.Snapshot {
				keep := pod("keep", "1")
				keep.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
				return world(nil, test.Candidate("a", "small", 0.1).Pods(pod("web", "500m")).Obj(),
					test.Candidate("b", "large", 0.4).Pods(keep).Obj())
			},
			want: summary{Command: "underutilized/delete (single): 1 node(s) a, saving $0.1000/h",
				Stays: map[string]disruption.StayReason{"b": disruption.StayDoNotDisrupt}},
		},
		{
			name: "nothing cheaper than the node: it stays",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "small", 0.05).Pods(pod("web", "1500m")).Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayNoCheaper}},
		},
		{
			name: "spot to spot consolidation is off by default",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "small", 0.08).Spot().Pods(pod("web", "1500m")).Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StaySpotToSpot}},
		},
		{
			name: "spot to spot consolidation with the feature gate on needs 15 cheaper spot types (spottospot_test.go)",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "small", 0.08).Spot().Pods(pod("web", "1500m")).Obj())
			},
			opts: disruption.Options{SpotToSpotConsolidation: true},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StaySpotToSpot}},
		},
		{
			name: "WhenEmpty leaves underutilized nodes alone",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").WhenEmpty().Obj(), test.Candidate("a", "large", 0.4).Pods(pod("web", "1")).Obj())
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayPolicy}},
		},
		{
			name: "consolidation waits while the cluster is busy",
			snap: func() *disruption.Snapshot {
				s := world(nil, test.Candidate("a", "medium", 0.2).Obj())
				s.Busy = "2 pods are pending"
				return s
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayBusy}},
		},
		{
			name: "consolidation waits for a pending pod the provisioner can place",
			snap: func() *disruption.Snapshot {
				s := world(nil, test.Candidate("a", "medium", 0.2).Obj())
				s.Pending = []*corev1.Pod{pod("waiting", "1")}
				return s
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayBusy}},
			check: func(t *testing.T, r *disruption.Result) {
				if msg := r.Stays[0].Message; !strings.Contains(msg, "1 pod is waiting for capacity") {
					t.Errorf("stay message %q does not say a pod is waiting", msg)
				}
			},
		},
		{
			name: "a pending pod that fits nowhere does not hold up consolidation",
			snap: func() *disruption.Snapshot {
				s := world(nil, test.Candidate("a", "medium", 0.2).Obj())
				s.Pending = []*corev1.Pod{pod("too-big", "96")}
				return s
			},
			want: summary{Command: "empty/delete (empty): 1 node(s) a, saving $0.2000/h", Stays: none},
		},
		{
			name: "a drifted node is replaced even when it would not save money",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "small", 0.1).Drifted(karpv1.ReasonNodePoolDrifted).Pods(pod("web", "1500m")).Obj())
			},
			want: summary{Command: "drifted/replace: 1 node(s) a, replaced by small", Stays: none},
		},
		{
			name: "a drifted empty node is deleted without replacement",
			snap: func() *disruption.Snapshot {
				return world(nil, test.Candidate("a", "small", 0.1).Drifted(karpv1.ReasonNodePoolDrifted).NotConsolidatable().Obj())
			},
			want: summary{Command: "drifted/delete: 1 node(s) a", Stays: none},
		},
		{
			name: "a node not initialized yet stays",
			snap: func() *disruption.Snapshot {
				c := test.Candidate("a", "medium", 0.2).Obj()
				c.Initialized = false
				return world(nil, c)
			},
			want: summary{Stays: map[string]disruption.StayReason{"a": disruption.StayNotInitialized}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := disruption.Decide(context.Background(), tc.snap(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(r)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestDecideIsDeterministic runs the same snapshot several times: the command must not change.
func TestDecideIsDeterministic(t *testing.T) {
	var first string
	for i := range 5 {
		s := world(nil, test.Candidate("c", "medium", 0.2).Pods(pod("x", "700m")).Obj(),
			test.Candidate("a", "medium", 0.2).Pods(pod("y", "700m")).Obj(),
			test.Candidate("b", "medium", 0.2).Pods(pod("z", "700m")).Obj())
		r, err := disruption.Decide(context.Background(), s, disruption.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Command == nil {
			t.Fatal("no command for three underutilized nodes")
		}
		if i == 0 {
			first = r.Command.Message()
		} else if got := r.Command.Message(); got != first {
			t.Fatalf("run %d: %q, run 0: %q", i, got, first)
		}
	}
}

func TestDecideRejectsNilSnapshot(t *testing.T) {
	if _, err := disruption.Decide(context.Background(), nil, disruption.Options{}); err == nil {
		t.Fatal("nil snapshot accepted")
	}
}

func pdb(app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func ptrTrue() *bool { b := true; return &b }
