package disruption

import (
	"encoding/json"
	"fmt"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Annotations that make a command in progress survive a restart of the controller.
const (
	// CommandAnnotationKey is set on every candidate of a command in progress; its value is a JSON record.
	CommandAnnotationKey = "dovetail.sh/disruption-command"
	// ReplacementForAnnotationKey is set on a replacement NodeClaim; its value is the command's ID.
	ReplacementForAnnotationKey = "dovetail.sh/replacement-for"
)

// record is what a candidate's CommandAnnotationKey holds.
type record struct {
	// ID names the command (the replacements point at it).
	ID string `json:"id"`
	// Reason is Drifted, Empty or Underutilized; Decision is delete or replace; ConsolidationType is empty,
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
}

func (r record) encode() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding disruption record: %w", err)
	}
	return string(b), nil
}

// decodeRecord reads a candidate's command record.
func decodeRecord(s string) (record, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("annotation %s: %w", CommandAnnotationKey, err)
	}
	if r.ID == "" {
		return r, fmt.Errorf("annotation %s has no id", CommandAnnotationKey)
	}
	return r, nil
}

// inProgress is a command some candidates carry, with the replacements that point at it.
type inProgress struct {
	record       record
	candidates   []*karpv1.NodeClaim
	replacements []*karpv1.NodeClaim
}
