package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	ctrldisruption "github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

var explainNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// prices of testdata/types.json (us-west-2a).
const (
	priceLarge   = 0.096
	price2XLarge = 0.384
)

// dovetailNode is an initialized, consolidatable NodeClaim "<name>-claim" of NodePool general and its Node name,
// running as instanceType on-demand in us-west-2a with the type's cpu and memory.
func dovetailNode(name, instanceType, cpu, memory string) (*test.NodeClaimBuilder, *test.NodeBuilder) {
	pid := "aws:///us-west-2a/i-" + name
	nc := test.NodeClaim(name+"-claim", "general").ProviderID(pid).NodeName(name).
		Initialized(explainNow.Add(-time.Hour)).Consolidatable(explainNow.Add(-time.Minute))
	node := test.Node(name, pid).Label(karpv1.NodePoolLabelKey, "general").
		Offering(instanceType, "us-west-2a", karpv1.CapacityTypeOnDemand).Capacity(corev1.ResourceCPU, cpu).Capacity(corev1.ResourceMemory, memory)
	return nc, node
}

// large is a consolidatable m5.large node n1 (NodeClaim n1-claim).
func large() (*test.NodeClaimBuilder, *test.NodeBuilder) {
	return dovetailNode("n1", "m5.large", "2", "8Gi")
}

func objs(os ...client.Object) []client.Object { return os }

// onDemand starts NodePool general limited to on-demand capacity (testdata/types.json also sells spot).
func onDemand() *test.NodePoolBuilder {
	return test.NodePool("general").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)
}

// spot is a consolidatable m5.xlarge spot node n1 (spot price $0.08/h).
func spot() (*test.NodeClaimBuilder, *test.NodeBuilder) {
	nc, n := dovetailNode("n1", "m5.xlarge", "4", "16Gi")
	return nc, n.Offering("m5.xlarge", "us-west-2a", karpv1.CapacityTypeSpot)
}

// nodeOutcome is the part of the report the decision fills.
type nodeOutcome struct {
	Decision          *NodeDecision
	CommandInProgress *CommandInProgress
	PricePerHour      *float64
	Warnings          []string
}

func price(p float64) *float64 { return &p }

func TestExplainNodeDecision(t *testing.T) {
	record := `{"id":"n1-claim-1764000000","reason":"Underutilized","decision":"replace","consolidationType":"single",` +
		`"replacements":1,"started":"2026-11-24T09:58:00Z","message":"underutilized/replace (single): 1 node(s) n1, replaced by m5.large, saving $0.2880/h"}`
	inProgress := &CommandInProgress{ID: "n1-claim-1764000000", Reason: "Underutilized", Decision: "replace", ConsolidationType: "single",
		Replacements: 1, Started: time.Date(2026, 11, 24, 9, 58, 0, 0, time.UTC),
		Message: "underutilized/replace (single): 1 node(s) n1, replaced by m5.large, saving $0.2880/h"}
	web := func(cpu string) *corev1.Pod { return test.Pod("web").Requests(cpu, "1Gi").Running("n1").Obj() }
	agent := test.Pod("agent").Requests("100m", "100Mi").OwnedBy("apps/v1", "DaemonSet", "agent").Running("n1").Obj()
	general := onDemand().Obj()
	for _, tc := range []struct {
		name string
		// objs are added to a NodePool general (when it has no other NodePool) and node n1 with its NodeClaim,
		// built by node (default: large()).
		objs []client.Object
		pool *karpv1.NodePool
		node func() (*test.NodeClaimBuilder, *test.NodeBuilder)
		opts func(*Options)
		want nodeOutcome
	}{
		{name: "an empty node is deleted", objs: objs(agent), want: nodeOutcome{PricePerHour: price(priceLarge),
			Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Empty", Message: "empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
				Command: &DecisionCommand{Reason: "Empty", ConsolidationType: "empty", Decision: "delete", Nodes: []string{"n1"}, SavingsPerHour: priceLarge}}}},
		{name: "an underutilized node is replaced by a cheaper one", objs: objs(web("500m")),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				return dovetailNode("n1", "m5.2xlarge", "8", "32Gi")
			},
			want: nodeOutcome{PricePerHour: price(price2XLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Underutilized",
				Message: "underutilized/replace (single): 1 node(s) n1, replaced by m5.large, saving $0.2880/h",
				Command: &DecisionCommand{Reason: "Underutilized", ConsolidationType: "single", Decision: "replace", Nodes: []string{"n1"},
					Replacements: []string{"m5.large/us-west-2a/on-demand"}, SavingsPerHour: price2XLarge - priceLarge}}}},
		{name: "a drifted node is replaced", objs: objs(web("500m")),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				nc, n := large()
				return nc.Drifted(karpv1.ReasonNodePoolDrifted, explainNow), n
			},
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Drifted",
				Message: "drifted/replace: 1 node(s) n1, replaced by m5.large",
				Command: &DecisionCommand{Reason: "Drifted", Decision: "replace", Nodes: []string{"n1"},
					Replacements: []string{"m5.large/us-west-2a/on-demand"}}}}},
		{name: "no cheaper replacement", objs: objs(web("1500m")), want: nodeOutcome{PricePerHour: price(priceLarge),
			Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "NoCheaperReplacement",
				Message: "no instance type that fits its pods is cheaper than $0.0960/h (cheapest m5.large at $0.0960/h)"}}},
		{name: "spot-to-spot consolidation is off by default", objs: objs(web("500m")), pool: test.NodePool("general").Obj(), node: spot,
			want: nodeOutcome{PricePerHour: price(0.08), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "SpotToSpot",
				Message: "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"}}},
		{name: "spot-to-spot consolidation with the controller's feature gate needs 15 cheaper spot types", objs: objs(web("500m")),
			pool: test.NodePool("general").Obj(), node: spot,
			opts: func(o *Options) { o.FeatureGates = "SpotToSpotConsolidation=true" },
			want: nodeOutcome{PricePerHour: price(0.08), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "SpotToSpot",
				Message: "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 1"}}},
		{name: "a do-not-disrupt pod", objs: objs(test.Pod("batch").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running("n1").Obj()),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "DoNotDisrupt",
				Message: "pod default/batch has the annotation karpenter.sh/do-not-disrupt=true"}}},
		{name: "a do-not-disrupt node", node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
			nc, n := large()
			return nc, n.Annotation(karpv1.DoNotDisruptAnnotationKey, "true")
		}, want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "DoNotDisrupt",
			Message: "node n1 has the annotation karpenter.sh/do-not-disrupt=true"}}},
		{name: "a PodDisruptionBudget allowing no disruption",
			objs: objs(test.Pod("db-0").Label("app", "db").Running("n1").Obj(), test.PDBFor("default", "db", "db")),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "PodDisruptionBudget",
				Message: "pod default/db-0 is covered by PodDisruptionBudget default/db, which allows no disruption now"}}},
		{name: "a budget of 0 nodes", pool: onDemand().Budget("0").Obj(),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "Budget",
				Message: "the disruption budgets of nodepool general allow no more Empty disruptions now"}}},
		{name: "consolidateAfter has not passed", objs: objs(web("500m")),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				nc, n := dovetailNode("n1", "m5.2xlarge", "8", "32Gi")
				return nc.Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse, "NotConsolidatable", explainNow), n
			},
			pool: onDemand().ConsolidateAfter("10m").Obj(),
			want: nodeOutcome{PricePerHour: price(price2XLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "NotConsolidatable",
				Message: "pods were scheduled or removed less than consolidateAfter (10m0s) ago"}}},
		{name: "consolidationPolicy WhenEmpty with pods", objs: objs(web("500m")), pool: onDemand().WhenEmpty().Obj(),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "ConsolidationPolicy",
				Message: "it has pods, and nodepool general consolidates only empty nodes (consolidationPolicy: WhenEmpty)"}}},
		{name: "a NodeClaim still launching does not hold up consolidation", objs: objs(test.NodeClaim("general-new", "general").Obj()),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Empty",
				Message: "empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
				Command: &DecisionCommand{Reason: "Empty", ConsolidationType: "empty", Decision: "delete", Nodes: []string{"n1"}, SavingsPerHour: priceLarge}}}},
		{name: "pods are not moved onto a node that is not initialized",
			objs: func() []client.Object {
				// n2 has room for n1's pod, but its NodeClaim is not initialized: deleting n1 would leave the pod
				// waiting for it, so n1 is replaced by a cheaper node instead.
				pid := "aws:///us-west-2a/i-n2"
				nc := test.NodeClaim("n2-claim", "general").ProviderID(pid).NodeName("n2")
				n := test.Node("n2", pid).Label(karpv1.NodePoolLabelKey, "general").
					Offering("m5.xlarge", "us-west-2a", karpv1.CapacityTypeOnDemand).Capacity(corev1.ResourceCPU, "4").Capacity(corev1.ResourceMemory, "16Gi")
				return objs(web("500m"), nc.Obj(), n.Obj())
			}(),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				return dovetailNode("n1", "m5.2xlarge", "8", "32Gi")
			},
			want: nodeOutcome{PricePerHour: price(price2XLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Underutilized",
				Message: "underutilized/replace (single): 1 node(s) n1, replaced by m5.large, saving $0.2880/h",
				Command: &DecisionCommand{Reason: "Underutilized", ConsolidationType: "single", Decision: "replace", Nodes: []string{"n1"},
					Replacements: []string{"m5.large/us-west-2a/on-demand"}, SavingsPerHour: price2XLarge - priceLarge}}}},
		{name: "a pending pod that can be placed holds up consolidation", objs: objs(test.Pod("waiting").Requests("1", "1Gi").Unschedulable().Obj()),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "ClusterBusy",
				Message: "consolidation waits: 1 pod is waiting for capacity the provisioner can launch"}}},
		{name: "a pending pod nothing can take does not", objs: objs(test.Pod("huge").Requests("100", "1Gi").Unschedulable().Obj()),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Empty",
				Message: "empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
				Command: &DecisionCommand{Reason: "Empty", ConsolidationType: "empty", Decision: "delete", Nodes: []string{"n1"}, SavingsPerHour: priceLarge}}}},
		{name: "an unknown price only allows deleting",
			objs: func() []client.Object {
				nc, n := dovetailNode("n2", "m5.xlarge", "4", "16Gi")
				return objs(web("500m"), nc.Obj(), n.Obj(),
					test.Pod("pinned").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running("n2").Obj())
			}(),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) { return dovetailNode("n1", "m4.large", "2", "8Gi") },
			want: nodeOutcome{
				Warnings: []string{"the price of m4.large in us-west-2a (on-demand) is unknown to testdata/types.json: consolidation can only delete this node, never replace it with a cheaper one"},
				Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Underutilized", Message: "underutilized/delete (single): 1 node(s) n1, saving $0.0000/h",
					Command: &DecisionCommand{Reason: "Underutilized", ConsolidationType: "single", Decision: "delete", Nodes: []string{"n1"}}}}},
		{name: "an unknown price and no room elsewhere", objs: objs(web("500m")),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) { return dovetailNode("n1", "m4.large", "2", "8Gi") },
			want: nodeOutcome{
				Warnings: []string{"the price of m4.large in us-west-2a (on-demand) is unknown to testdata/types.json: consolidation can only delete this node, never replace it with a cheaper one"},
				Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "NoCheaperReplacement",
					Message: "no instance type that fits its pods is cheaper than $0.0000/h (cheapest m5.large at $0.0960/h)"}}},
		{name: "a command in progress on the node", objs: objs(web("500m")),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				nc, n := dovetailNode("n1", "m5.2xlarge", "8", "32Gi")
				return nc.Annotation(ctrldisruption.CommandAnnotationKey, record), n
			},
			want: nodeOutcome{PricePerHour: price(price2XLarge), CommandInProgress: inProgress,
				Decision: &NodeDecision{Outcome: OutcomeInProgress, Reason: "Underutilized",
					Message: "disruption command n1-claim-1764000000, started 2026-11-24T09:58:00Z, is being carried out: " + inProgress.Message}}},
		{name: "a command in progress elsewhere does not hold the node up",
			objs: func() []client.Object {
				nc, n := dovetailNode("n2", "m5.xlarge", "4", "16Gi")
				return objs(agent, nc.Annotation(ctrldisruption.CommandAnnotationKey, strings.Replace(record, "n1-claim-", "n2-claim-", 1)).Obj(), n.Obj())
			}(),
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Empty",
				Message: "empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
				Command: &DecisionCommand{Reason: "Empty", ConsolidationType: "empty", Decision: "delete", Nodes: []string{"n1"}, SavingsPerHour: priceLarge}}}},
		{name: "the replacement of a command in progress",
			objs: func() []client.Object {
				nc, n := dovetailNode("n2", "m5.xlarge", "4", "16Gi")
				return objs(agent, nc.Annotation(ctrldisruption.CommandAnnotationKey, strings.Replace(record, "n1-claim-", "n2-claim-", 1)).Obj(), n.Obj())
			}(),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				nc, n := large()
				return nc.Annotation(ctrldisruption.ReplacementForAnnotationKey, "n2-claim-1764000000"), n
			},
			want: nodeOutcome{PricePerHour: price(priceLarge), Decision: &NodeDecision{Outcome: OutcomeStay, Reason: "ClusterBusy",
				Message: "it replaces nodeclaim(s) n2-claim in disruption command n2-claim-1764000000 (" + inProgress.Message + "): their pods are to move here"}}},
		{name: "an unreadable command record is reported and ignored", objs: objs(agent),
			node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
				nc, n := large()
				return nc.Annotation(ctrldisruption.CommandAnnotationKey, "{"), n
			},
			want: nodeOutcome{PricePerHour: price(priceLarge),
				Warnings: []string{"NodeClaim n1-claim: annotation dovetail.sh/disruption-command: unexpected end of JSON input (the controller drops an unreadable record on its next pass)"},
				Decision: &NodeDecision{Outcome: OutcomeDisrupt, Reason: "Empty", Message: "empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
					Command: &DecisionCommand{Reason: "Empty", ConsolidationType: "empty", Decision: "delete", Nodes: []string{"n1"}, SavingsPerHour: priceLarge}}}},
		{name: "a node Dovetail did not launch", node: func() (*test.NodeClaimBuilder, *test.NodeBuilder) {
			return nil, test.Node("n1", "aws:///us-west-2a/i-n1").Offering("m5.large", "us-west-2a", karpv1.CapacityTypeOnDemand)
		}, want: nodeOutcome{Decision: &NodeDecision{Outcome: OutcomeNotCandidate,
			Message: "no NodeClaim launched node n1: the disruption controller considers only the nodes Dovetail launched"}}},
		{name: "a static NodePool's node is no candidate", objs: objs(web("500m")),
			pool: func() *karpv1.NodePool {
				np := onDemand().Obj()
				replicas := int64(1)
				np.Spec.Replicas = &replicas
				return np
			}(),
			want: nodeOutcome{PricePerHour: price(priceLarge), Warnings: []string{"NodePool general launches no replacements: static: spec.replicas is 1"},
				Decision: &NodeDecision{Outcome: OutcomeNotCandidate,
					Message: "NodePool general is static (spec.replicas 1): the disruption controller never considers its nodes; the static NodePool controller keeps their count and replaces drifted ones"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := general
			if tc.pool != nil {
				pool = tc.pool
			}
			mk := tc.node
			if mk == nil {
				mk = large
			}
			nc, node := mk()
			all := append(objs(pool, node.Obj()), tc.objs...)
			if nc != nil {
				all = append(all, nc.Obj())
			}
			o := &Options{Output: "json", Region: "us-west-2", InstanceTypesFile: "testdata/types.json", Clock: clocktesting.NewFakePassiveClock(explainNow)}
			if tc.opts != nil {
				tc.opts(o)
			}
			var out bytes.Buffer
			if err := RunNode(context.Background(), fakeClient(t, all...), o, "n1", &out); err != nil {
				t.Fatalf("RunNode: %v", err)
			}
			var r NodeReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out.String())
			}
			got := nodeOutcome{Decision: r.Decision, CommandInProgress: r.CommandInProgress, PricePerHour: r.PricePerHour, Warnings: r.Warnings}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// The table output carries the decision, the command in progress and the price; the lines the e2e test and the
// docs rely on stay.
func TestExplainNodeTable(t *testing.T) {
	nc, node := large()
	pinned := test.Pod("small").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running("n1").Obj()
	c := fakeClient(t, onDemand().Obj(), nc.Obj(), node.Obj(), pinned)
	o := &Options{Output: "table", Region: "us-west-2", InstanceTypesFile: "testdata/types.json", Clock: clocktesting.NewFakePassiveClock(explainNow)}
	var out bytes.Buffer
	if err := RunNode(context.Background(), c, o, "n1", &out); err != nil {
		t.Fatalf("RunNode: %v", err)
	}
	want := `Node n1
  nodepool: general  nodeclaim: n1-claim
  instance type: m5.large  zone: us-west-2a  capacity type: on-demand
  price: $0.0960/h (testdata/types.json)
  requests/allocatable: cpu 0/2, memory 0/8Gi, pods 1/110
  disruption: consolidationPolicy , consolidateAfter Never
  conditions:
    Consolidatable=True (Consolidatable)
    Initialized=True (Initialized)
    Launched=True (Launched)
    Registered=True (Registered)
Node repair: off (FEATURE_GATES NodeRepair=false); healthy: no repair policy matches its conditions
Disruption decision: stays [DoNotDisrupt]: pod default/small has the annotation karpenter.sh/do-not-disrupt=true
Disruption command in progress: none
Why it stays:
  - pod default/small has karpenter.sh/do-not-disrupt=true
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// A node that stays for a reason of the moment only (here: consolidateAfter has not passed) has no standing
// blocker, and the last line must not contradict the decision.
func TestExplainNodeTableStaysWithoutBlocker(t *testing.T) {
	nc, node := dovetailNode("n1", "m5.2xlarge", "8", "32Gi")
	nc = nc.Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse, "NotConsolidatable", explainNow)
	web := test.Pod("web").Requests("500m", "1Gi").Running("n1").Obj()
	c := fakeClient(t, onDemand().ConsolidateAfter("10m").Obj(), nc.Obj(), node.Obj(), web)
	o := &Options{Output: "table", Region: "us-west-2", InstanceTypesFile: "testdata/types.json", Clock: clocktesting.NewFakePassiveClock(explainNow)}
	var out bytes.Buffer
	if err := RunNode(context.Background(), c, o, "n1", &out); err != nil {
		t.Fatalf("RunNode: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		"Disruption decision: stays [NotConsolidatable]: pods were scheduled or removed less than consolidateAfter (10m0s) ago",
		"Disruption command in progress: none",
		"Nothing that blocks every disruption method (do-not-disrupt, a PodDisruptionBudget, the NodePool's policy) applies; it stays this pass for the reason above.",
	}
	if len(lines) < len(want) {
		t.Fatalf("output too short:\n%s", out.String())
	}
	if diff := cmp.Diff(want, lines[len(lines)-len(want):]); diff != "" {
		t.Errorf("last lines (-want +got):\n%s", diff)
	}
}

// The repair line says when an unhealthy node would be repaired, whether or not the gate is on, and honours
// --node-repair-tolerations.
func TestExplainNodeRepair(t *testing.T) {
	nc, node := large()
	n := node.Obj()
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(explainNow.Add(-10 * time.Minute))})
	c := fakeClient(t, onDemand().Obj(), nc.Obj(), n)
	for _, tc := range []struct {
		name  string
		gates string
		tols  string
		want  string
	}{
		{"gate off", "", "", "Node repair: off (FEATURE_GATES NodeRepair=false), nothing will happen; with it on: unhealthy (KernelReady=False since 2026-11-24T09:50:00Z); would be repaired at 2026-11-24T10:20:00Z, after the 30m0s toleration"},
		{"gate on", "NodeRepair=true", "", "Node repair: unhealthy (KernelReady=False since 2026-11-24T09:50:00Z); would be repaired at 2026-11-24T10:20:00Z, after the 30m0s toleration"},
		{"shortened toleration", "NodeRepair=true", "KernelReady=5m", "Node repair: unhealthy (KernelReady=False since 2026-11-24T09:50:00Z) past its 5m0s toleration since 2026-11-24T09:55:00Z: repaired now (its NodeClaim deleted, the drain not waiting for PodDisruptionBudgets)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{Output: "table", Region: "us-west-2", InstanceTypesFile: "testdata/types.json", Clock: clocktesting.NewFakePassiveClock(explainNow),
				FeatureGates: tc.gates, NodeRepairTolerations: tc.tols}
			var out bytes.Buffer
			if err := RunNode(context.Background(), c, o, "n1", &out); err != nil {
				t.Fatalf("RunNode: %v", err)
			}
			var line string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(l, "Node repair: ") {
					line = l
				}
			}
			if diff := cmp.Diff(tc.want, line); diff != "" {
				t.Errorf("repair line (-want +got):\n%s\n%s", diff, out.String())
			}
		})
	}
}

func TestExplainNodeOptionErrors(t *testing.T) {
	nc, node := large()
	c := fakeClient(t, test.NodePool("general").Obj(), nc.Obj(), node.Obj())
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{name: "unknown feature gate", opts: Options{FeatureGates: "Teleport=true"}, want: `unknown feature gate "Teleport"`},
		{name: "repair tolerations of an unwatched condition", opts: Options{FeatureGates: "NodeRepair=true", NodeRepairTolerations: "Happy=1m"},
			want: "--node-repair-tolerations: no repair policy of the cloud provider watches condition Happy"},
		{name: "bad preference policy", opts: Options{PreferencePolicy: "Sometimes"}, want: "PREFERENCE_POLICY (--preference-policy)"},
		{name: "unknown region", opts: Options{Region: "mars-1"}, want: `region "mars-1" is not in the built-in catalog`},
		{name: "missing instance-types file", opts: Options{InstanceTypesFile: "testdata/nope.json"}, want: "testdata/nope.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Output = "table"
			if o.Region == "" {
				o.Region = "us-west-2"
			}
			err := RunNode(context.Background(), c, &o, "n1", &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestExplainNodeReservation: a node in a capacity reservation shows the reservation from its labels.
func TestExplainNodeReservation(t *testing.T) {
	nc, node := large()
	node.Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeReserved).Label(awsv1.LabelCapacityReservationID, "cr-0123").
		Label(awsv1.LabelCapacityReservationType, "capacity-block").Label(awsv1.LabelCapacityReservationInterruptible, "false")
	c := fakeClient(t, onDemand().Obj(), nc.Obj(), node.Obj())
	o := &Options{Output: "table", Region: "us-west-2", InstanceTypesFile: "testdata/types.json", Clock: clocktesting.NewFakePassiveClock(explainNow)}
	var out bytes.Buffer
	if err := RunNode(context.Background(), c, o, "n1", &out); err != nil {
		t.Fatalf("RunNode: %v", err)
	}
	if want := "  instance type: m5.large  zone: us-west-2a  capacity type: reserved\n  capacity reservation: cr-0123  type: capacity-block  interruptible: false\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}
