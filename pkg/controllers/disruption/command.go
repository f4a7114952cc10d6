package disruption

import (
	"sort"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/internal/disruptionview"
)

// Annotations that make a command in progress survive a restart of the controller (see disruptionview).
const (
	CommandAnnotationKey        = disruptionview.CommandAnnotationKey
	ReplacementForAnnotationKey = disruptionview.ReplacementForAnnotationKey
	// ReplacementHoldTaintKey holds a replacement for its command's pods until the command drains.
	ReplacementHoldTaintKey = disruptionview.ReplacementHoldTaintKey
)

type (
	// Record is what a candidate's CommandAnnotationKey holds.
	Record = disruptionview.Record
	// Launch is one replacement NodeClaim a command creates.
	Launch = disruptionview.Launch
	// View is what one disruption pass reads of the cluster.
	View = disruptionview.View
)

// RecordOf reads the command record a NodeClaim carries (disruptionview.RecordOf).
func RecordOf(nc *karpv1.NodeClaim) (Record, bool, error) { return disruptionview.RecordOf(nc) }

// InProgress is a command some candidates carry, with the replacements that point at it.
type InProgress struct {
	// Record is the first candidate's record, or the newest (highest Extra) when the candidates' differ.
	Record Record
	// Candidates are the NodeClaims not being deleted that carry the command's record, by name.
	Candidates []*karpv1.NodeClaim
	// Replacements are the NodeClaims whose ReplacementForAnnotationKey names the command, by name.
	Replacements []*karpv1.NodeClaim
	// Draining are the candidates of earlier waves: NodeClaims being deleted that carry the command's record.
	Draining []*karpv1.NodeClaim
}

// total is how many candidates the command started with.
func (cmd *InProgress) total() int {
	return max(cmd.Record.Candidates, len(cmd.Candidates)+len(cmd.Draining))
}

// CommandsInProgress groups the commands the view's NodeClaims carry, sorted by ID. NodeClaims being deleted and
// records that cannot be read are left out.
func CommandsInProgress(v *View) []*InProgress {
	byID := map[string]*InProgress{}
	var ids []string
	for i := range v.Claims {
		nc := &v.Claims[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		r, ok, err := RecordOf(nc)
		if !ok || err != nil {
			continue
		}
		switch {
		case byID[r.ID] == nil:
			byID[r.ID] = &InProgress{Record: r}
			ids = append(ids, r.ID)
		case r.Extra > byID[r.ID].Record.Extra:
			// A pass that launched more replacements did not get to record it on every candidate: the
			// newest record is the command's (resume writes it on the others).
			byID[r.ID].Record = r
		}
		byID[r.ID].Candidates = append(byID[r.ID].Candidates, nc)
	}
	for i := range v.Claims {
		nc := &v.Claims[i]
		if cmd := byID[nc.Annotations[ReplacementForAnnotationKey]]; cmd != nil {
			cmd.Replacements = append(cmd.Replacements, nc)
		}
		if nc.DeletionTimestamp.IsZero() {
			continue
		}
		if r, ok, err := RecordOf(nc); ok && err == nil && byID[r.ID] != nil {
			byID[r.ID].Draining = append(byID[r.ID].Draining, nc)
		}
	}
	sort.Strings(ids)
	var out []*InProgress
	for _, id := range ids {
		out = append(out, byID[id])
	}
	return out
}
