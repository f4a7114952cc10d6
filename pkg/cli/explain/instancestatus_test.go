package explain

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestNodeReportNamesUnhealthyReplacement: a NodeClaim deleted for a failed EC2 status check says so.
func TestNodeReportNamesUnhealthyReplacement(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	nc := test.NodeClaim("a", "default").Annotation(interruption.InstanceUnhealthyAnnotation, "EC2 reports SystemStatus check reachability failing since 2026-11-29T06:57:00Z").Obj()
	nc.DeletionTimestamp = &now
	node := test.Node("a-node", "aws:///us-west-2a/i-a").Label(karpv1.NodePoolLabelKey, "default").Obj()
	r := nodeReport(node, nc, nil, nil, nil, now.Time)
	want := "none: NodeClaim a is being deleted (draining, replaced for an unhealthy instance: EC2 reports SystemStatus check reachability failing since 2026-11-29T06:57:00Z)"
	for _, b := range r.Blockers {
		if b == want {
			return
		}
	}
	t.Errorf("blockers %q lack %q", r.Blockers, want)
}
