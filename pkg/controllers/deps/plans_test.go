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
