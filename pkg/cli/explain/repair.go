package explain

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	ctrldisruption "github.com/dovetail/dovetail/pkg/controllers/disruption"
	awsprovider "github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/repair"
	"github.com/dovetail/dovetail/pkg/settings"
)

// RepairReport is what node repair (the NodeRepair feature gate) would do about the node.
type RepairReport struct {
	// Enabled is the NodeRepair gate as given with --feature-gates.
	Enabled bool `json:"enabled"`
	// Verdict is Healthy, Tolerated, Repair or HeldBack (pkg/repair), or NotManaged for a node no NodeClaim
	// launched.
	Verdict string `json:"verdict"`
	// RepairAt is when the node's toleration ends (or ended), for an unhealthy node.
	RepairAt *time.Time `json:"repairAt,omitempty"`
	Message  string     `json:"message"`
}

// repairReport decides about the node as the node health controller would, with the AWS provider's repair
// policies and the tolerations of s.
func repairReport(s *settings.Settings, v *ctrldisruption.View, node *corev1.Node, nc *karpv1.NodeClaim, now time.Time) (*RepairReport, error) {
	r := &RepairReport{Enabled: s.FeatureEnabled(settings.FeatureNodeRepair)}
	if nc == nil {
		r.Verdict, r.Message = "NotManaged", "no NodeClaim launched this node: it is never repaired"
		return r, nil
	}
	policies, err := repair.WithTolerations(awsprovider.RepairPolicies(s.AWSFeatureEnabled(settings.AWSFeatureRebootForRepair)), s.NodeRepairTolerations)
	if err != nil {
		return nil, fmt.Errorf("--node-repair-tolerations: %w", err)
	}
	in := repair.Input{Now: now, Policies: policies}
	pool := node.Labels[karpv1.NodePoolLabelKey]
	for _, n := range v.Nodes {
		if n.Name == node.Name || pool == "" || n.Labels[karpv1.NodePoolLabelKey] == pool {
			in.Nodes = append(in.Nodes, n)
		}
	}
	if _, ok := v.Nodes[node.Name]; !ok {
		in.Nodes = append(in.Nodes, node)
	}
	d, _ := repair.DecideNode(in, node.Name)
	r.Verdict, r.Message = string(d.Verdict), d.Message()
	if d.Health.Unhealthy {
		at := d.Health.RepairAt.UTC()
		r.RepairAt = &at
	}
	if !nc.DeletionTimestamp.IsZero() && d.Verdict != repair.Healthy {
		r.Message += "; its NodeClaim is already being deleted"
	}
	return r, nil
}

// line is the report's line in the table output.
func (r *RepairReport) line() string {
	if r.Enabled {
		return r.Message
	}
	if r.Verdict == string(repair.Healthy) || r.Verdict == "NotManaged" {
		return "off (FEATURE_GATES NodeRepair=false); " + r.Message
	}
	return "off (FEATURE_GATES NodeRepair=false), nothing will happen; with it on: " + r.Message
}
