package disruptionview

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Annotations that make a command in progress survive a restart of the controller.
const (
	// CommandAnnotationKey is set on every candidate of a command in progress; its value is a JSON record.
	CommandAnnotationKey = "dovetail.sh/disruption-command"
	// ReplacementForAnnotationKey is set on a replacement NodeClaim; its value is the command's ID.
	ReplacementForAnnotationKey = "dovetail.sh/replacement-for"
)

// ReplacementHoldTaintKey is the taint a replacement's Node registers with (PreferNoSchedule, the command's ID as
// its value) and keeps until its command drains: the kube-scheduler then puts the pods of other nodes being
// drained elsewhere when it can, so that the room the replacement was launched for is still there when the
// command's own pods move. Without it, a replacement waiting for its command to drain was the emptiest node of
// the cluster and took the pods of every other drain first (61-105 extra replacement launches in a 600-node
// drift). A preference, not a rule: a pod with no room elsewhere still goes there.
const ReplacementHoldTaintKey = "dovetail.sh/replacement-held"

// ReplacementHoldTaint is the hold of the replacements of the command id.
func ReplacementHoldTaint(id string) corev1.Taint {
	return corev1.Taint{Key: ReplacementHoldTaintKey, Value: id, Effect: corev1.TaintEffectPreferNoSchedule}
}

// Record is what a candidate's CommandAnnotationKey holds.
type Record struct {
	// ID names the command (the replacements point at it).
	ID string `json:"id"`
	// Reason is Unhealthy, Drifted, Empty or Underutilized; Decision is delete or replace; ConsolidationType is empty,
	// single, multi or "".
	Reason            karpv1.DisruptionReason `json:"reason"`
	Decision          string                  `json:"decision"`
	ConsolidationType string                  `json:"consolidationType,omitempty"`
	// Replacements is how many replacement NodeClaims must initialize before the candidates are deleted.
	Replacements int `json:"replacements"`
	// Started is when the command began.
	Started time.Time `json:"started"`
	// Message is the command's one-line summary.
	Message string `json:"message,omitempty"`
	// Launch are the replacements to create, named when the command starts: a pass that stops after recording
	// the command (an API error, a restart) leaves the next pass to create the ones missing. Records written
	// before this field existed have none, and a missing replacement then ends the command after a grace.
	Launch []Launch `json:"launch,omitempty"`
	// Plan names the whole-cluster consolidation plan the command belongs to, or is empty.
	Plan string `json:"plan,omitempty"`
	// Candidates is how many nodes the command disrupts: its candidates are deleted in waves,
	// and a command with fewer candidates left than this has drained some. Records written before this field
	// existed have 0: their candidates are counted as they are.
	Candidates int `json:"candidates,omitempty"`
	// Extra counts the times the command launched more replacements than it started with (at most
	// MaxExtraLaunches): its replacements initialized, but the kube-scheduler had filled them with other pods.
	// Launched is when it last did; the replacement timeouts count from then.
	Extra    int       `json:"extra,omitempty"`
	Launched time.Time `json:"launched,omitempty"`
	// Condition is, for node repair (reason Unhealthy), the node condition that made the node unhealthy, and
	// DrainBound (a Go duration) the bound on its drain, stamped as its termination deadline when it is deleted.
	Condition  string `json:"condition,omitempty"`
	DrainBound string `json:"drainBound,omitempty"`
}

// Since is when the command last launched replacements: its start, or its last extra launch.
func (r Record) Since() time.Time {
	if r.Launched.After(r.Started) {
		return r.Launched
	}
	return r.Started
}

// Launch is one replacement NodeClaim a command creates.
type Launch struct {
	// Name is the NodeClaim's name, chosen when the command starts.
	Name     string `json:"name"`
	NodePool string `json:"nodePool"`
	// Requirements and Requests are the NodeClaim's, as the decision planned them.
	Requirements []karpv1.NodeSelectorRequirementWithMinValues `json:"requirements,omitempty"`
	Requests     corev1.ResourceList                           `json:"requests,omitempty"`
	// Extra marks a replacement launched after the command started because its pods no longer fit (launchExtra).
	Extra bool `json:"extra,omitempty"`
	// For are the pods (namespace/name) an extra replacement was planned for.
	For []string `json:"for,omitempty"`
}

// Encode is the record as CommandAnnotationKey holds it.
func (r Record) Encode() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding disruption record: %w", err)
	}
	return string(b), nil
}

// DecodeRecord reads a candidate's command record.
func DecodeRecord(s string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("annotation %s: %w", CommandAnnotationKey, err)
	}
	if r.ID == "" {
		return r, fmt.Errorf("annotation %s has no id", CommandAnnotationKey)
	}
	return r, nil
}

// RecordOf reads the command record a NodeClaim carries; ok is false when it has none. A record that cannot be
// read is an error: the controller drops it (and untaints the node) on its next pass.
func RecordOf(nc *karpv1.NodeClaim) (r Record, ok bool, err error) {
	raw, ok := nc.Annotations[CommandAnnotationKey]
	if !ok {
		return Record{}, false, nil
	}
	if r, err = DecodeRecord(raw); err != nil {
		return Record{}, true, fmt.Errorf("NodeClaim %s: %w", nc.Name, err)
	}
	return r, true, nil
}

// carriesCommand says whether a NodeClaim not being deleted is a candidate of a command in progress: it carries
// a record that can be read.
func carriesCommand(nc *karpv1.NodeClaim) bool {
	_, ok, err := RecordOf(nc)
	return nc.DeletionTimestamp.IsZero() && ok && err == nil
}
