package deps

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestPlans: the plan book the provisioner writes after each pass and the NodeClaim lifecycle reads at
// registration. A new plan replaces the old one whole; nominations are recorded when set, dropped when cleared,
// and forgotten for pods that are no longer pending; readers get copies.
func TestPlans(t *testing.T) {
	a := PodRef{Namespace: "default", Name: "a", UID: "uid-a"}
	b := PodRef{Namespace: "default", Name: "b", UID: "uid-b"}
	p := NewPlans()
	if got := p.Planned("claim-1"); len(got) != 0 {
		t.Errorf("empty book: planned %v", got)
	}
	p.SetPlanned(map[string][]PodRef{"claim-1": {a}, "claim-2": {b}})
	p.SetPlanned(map[string][]PodRef{"claim-1": {a, b}})
	if d := cmp.Diff([]PodRef{a, b}, p.Planned("claim-1")); d != "" {
		t.Errorf("claim-1 (-want +got):\n%s", d)
	}
	if got := p.Planned("claim-2"); len(got) != 0 {
		t.Errorf("claim-2 planned %v after a plan without it", got)
	}
	got := p.Planned("claim-1")
	got[0] = PodRef{Name: "changed"}
	if p.Planned("claim-1")[0] != a {
		t.Error("Planned returned the book's own slice")
	}

	p.UpdateNominated(map[types.UID]string{"uid-a": "node-1", "uid-b": "node-2"})
	p.UpdateNominated(map[types.UID]string{"uid-b": ""}) // cleared
	if d := cmp.Diff(map[types.UID]string{"uid-a": "node-1"}, p.Nominated()); d != "" {
		t.Errorf("nominated after clearing b (-want +got):\n%s", d)
	}
	n := p.Nominated()
	n["uid-z"] = "node-9"
	if _, ok := p.Nominated()["uid-z"]; ok {
		t.Error("Nominated returned the book's own map")
	}
	p.UpdateNominated(map[types.UID]string{"uid-b": "node-2"})
	p.ForgetNominatedExcept(map[types.UID]bool{"uid-b": true}) // a was bound or deleted
	if d := cmp.Diff(map[types.UID]string{"uid-b": "node-2"}, p.Nominated()); d != "" {
		t.Errorf("nominated after a left (-want +got):\n%s", d)
	}
	p.ForgetNominatedExcept(nil)
	if got := p.Nominated(); len(got) != 0 {
		t.Errorf("nominated with nothing pending: %v", got)
	}
}

// TestMayNominateOn: without a budget every node may get nominations; with one, a node that carries ours
// already always may, another only while fewer nodes than the budget carry ours.
func TestMayNominateOn(t *testing.T) {
	p := NewPlans()
	p.UpdateNominated(map[types.UID]string{"a": "node-1", "b": "node-1", "c": "node-2"})
	if !p.MayNominateOn("node-3") {
		t.Error("no budget: node-3 refused")
	}
	p.SetNominationBudget(2)
	for node, want := range map[string]bool{"node-1": true, "node-2": true, "node-3": false} {
		if got := p.MayNominateOn(node); got != want {
			t.Errorf("budget 2, nominations on node-1 and node-2: MayNominateOn(%s) = %v, want %v", node, got, want)
		}
	}
	p.UpdateNominated(map[types.UID]string{"c": ""})
	if !p.MayNominateOn("node-3") {
		t.Error("budget 2, nominations on node-1 only: node-3 refused")
	}
}

// TestNominationBudget: nominated nodes × cluster nodes stays near 250,000, never fewer than 12 nodes.
func TestNominationBudget(t *testing.T) {
	for nodes, want := range map[int]int{0: 250_000, 10: 25_000, 500: 500, 1_000: 250, 5_000: 50, 5_800: 43, 20_000: 12, 100_000: 12} {
		if got := NominationBudget(nodes); got != want {
			t.Errorf("NominationBudget(%d) = %d, want %d", nodes, got, want)
		}
	}
}
