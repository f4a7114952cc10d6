package staticcapacity

import (
	"fmt"
	"sort"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Claim is one NodeClaim of the NodePool as the plan needs it.
type Claim struct {
	Name string
	// Deleting says it is already going away: it no longer counts towards replicas.
	Deleting bool
	// Initialized says the node is up: a drifted node is only deleted once its replacements are.
	Initialized bool
	// Drifted says its Drifted condition is true.
	Drifted bool
	// Pods is the number of pods on its node that a deletion would evict (0 for an empty node).
	Pods int
	// DoNotDisrupt says a pod or the node carries karpenter.sh/do-not-disrupt: a scale-down takes it last.
	DoNotDisrupt bool
	CreatedAt    time.Time
}

// Input is a static NodePool's state.
type Input struct {
	Replicas int
	// NodeLimit is limits.nodes, or nil without one.
	NodeLimit *int
	Claims    []Claim
	// Allowed is how many more nodes each disruption reason may disrupt now (pkg/disruption.AllowedDisruptions,
	// counting the deleting claims as disrupting).
	Allowed map[karpv1.DisruptionReason]int
	// TerminateFirst lets a drifted node that limits.nodes leaves no room to replace first be deleted before its
	// replacement is created (the TerminateFirstDrift gate, with the NodePool ready to create the replacement).
	TerminateFirst bool
}

// Deletion is a NodeClaim to delete and why.
type Deletion struct {
	Name string
	// Reason is Drifted for a drifted node whose replacement is up, empty otherwise (a scale-down).
	Reason karpv1.DisruptionReason
	// TerminateFirst says the node is deleted before its replacement exists (Input.TerminateFirst): the
	// replacement is created once it is gone.
	TerminateFirst bool
}

// Plan is what to do now.
type Plan struct {
	// Create is how many NodeClaims to create.
	Create int
	// CreateForDrift is how many of Create replace drifted nodes (the rest bring the count up to replicas).
	CreateForDrift int
	Delete         []Deletion
	// Waiting says why part of the work waits (a budget, the node limit, replacements still launching), or "".
	Waiting string
}

// Decide returns the plan for in. Below replicas it creates the missing NodeClaims (limits.nodes permitting).
// At replicas with drifted nodes it creates their replacements first (as the Drifted budget and limits.nodes
// permit), and once those are initialized, deletes the drifted nodes. Above replicas it deletes the surplus:
// drifted nodes first, then empty ones, then those with the fewest pods (youngest first on ties), nodes with
// do-not-disrupt pods last, each deletion within every active budget.
func Decide(in Input) Plan {
	var active []Claim
	drifted, launching := 0, 0
	for _, c := range in.Claims {
		if c.Deleting {
			continue
		}
		active = append(active, c)
		if c.Drifted {
			drifted++
		} else if !c.Initialized {
			launching++
		}
	}
	room := -1 // unlimited
	if in.NodeLimit != nil {
		room = max(0, *in.NodeLimit-len(active))
	}
	capped := func(n int) int {
		if room >= 0 && n > room {
			return room
		}
		return n
	}
	var p Plan
	n := len(active)
	switch {
	case n < in.Replicas:
		p.Create = capped(in.Replicas - n)
		if p.Create < in.Replicas-n {
			p.Waiting = fmt.Sprintf("limits.nodes (%d) allows %d of the %d missing nodes", *in.NodeLimit, p.Create, in.Replicas-n)
		}
		return p
	case n == in.Replicas:
		if drifted == 0 {
			return p
		}
		want := min(drifted, in.Allowed[karpv1.DisruptionReasonDrifted])
		p.CreateForDrift = capped(want)
		p.Create = p.CreateForDrift
		switch {
		case want == 0:
			p.Waiting = fmt.Sprintf("the Drifted budget allows no disruption for the %d drifted nodes", drifted)
		case p.Create < want && in.TerminateFirst:
			// No room to replace first: the drifted nodes the room lacks go first, and the NodePool, below its
			// replicas, refills.
			p.Delete = terminateFirst(active, want-p.Create)
		case p.Create < want:
			p.Waiting = fmt.Sprintf("limits.nodes (%d) leaves no room to replace drifted nodes", *in.NodeLimit)
		}
		return p
	}
	// Surplus: a scale-down, or replacements for drifted nodes.
	surplus := n - in.Replicas
	order := append([]Claim(nil), active...)
	sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
	allowed := map[karpv1.DisruptionReason]int{}
	for r, v := range in.Allowed {
		allowed[r] = v
	}
	for _, c := range order {
		if surplus == 0 {
			break
		}
		reason := karpv1.DisruptionReason("")
		if c.Drifted && n-drifted >= in.Replicas {
			// Enough undrifted nodes exist: this one is replaced once they are all up.
			if launching > 0 {
				p.Waiting = fmt.Sprintf("%d replacement nodes are still launching", launching)
				break
			}
			reason = karpv1.DisruptionReasonDrifted
		}
		if !fits(allowed, reason) {
			p.Waiting = "the disruption budgets allow no more deletions now"
			break
		}
		for r := range allowed {
			allowed[r]--
		}
		p.Delete = append(p.Delete, Deletion{Name: c.Name, Reason: reason})
		surplus--
	}
	return p
}

// terminateFirst picks n drifted claims to delete before their replacements exist, in deletion order (less).
func terminateFirst(active []Claim, n int) []Deletion {
	order := append([]Claim(nil), active...)
	sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
	var out []Deletion
	for _, c := range order {
		if len(out) == n || !c.Drifted {
			break
		}
		out = append(out, Deletion{Name: c.Name, Reason: karpv1.DisruptionReasonDrifted, TerminateFirst: true})
	}
	return out
}

// fits reports whether a deletion for reason (Drifted, or "" for a scale-down that must fit every budget) is
// allowed.
func fits(allowed map[karpv1.DisruptionReason]int, reason karpv1.DisruptionReason) bool {
	if reason != "" {
		return allowed[reason] > 0
	}
	for _, v := range allowed {
		if v <= 0 {
			return false
		}
	}
	return true
}

// less orders claims for deletion: drifted, then not do-not-disrupt, fewest pods, youngest, name.
func less(a, b Claim) bool {
	if a.Drifted != b.Drifted {
		return a.Drifted
	}
	if a.DoNotDisrupt != b.DoNotDisrupt {
		return !a.DoNotDisrupt
	}
	if a.Pods != b.Pods {
		return a.Pods < b.Pods
	}
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.Name < b.Name
}
