//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestInvalidNodePoolRejectedAtApply checks that the API server of the local stack refuses invalid NodePools with
// a message that names the problem, as `kubectl apply` shows it to a user.
func TestInvalidNodePoolRejectedAtApply(t *testing.T) {
	const base = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: invalid}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [%REQ%]
%EXTRA%
`
	cases := []struct {
		name, req, extra string
		wantInMessage    []string
	}{
		{
			name:          "weight 0",
			extra:         "  weight: 0",
			wantInMessage: []string{"spec.weight", "1"},
		},
		{
			name:          "requirement on karpenter.sh/nodepool",
			req:           `{key: karpenter.sh/nodepool, operator: In, values: [x]}`,
			wantInMessage: []string{"karpenter.sh/nodepool"},
		},
		{
			name:          "malformed budget schedule",
			extra:         "  disruption:\n    budgets: [{nodes: \"1\", schedule: \"every day\", duration: 1h}]",
			wantInMessage: []string{"schedule"},
		},
		{
			name:          "kubernetes.io/hostname requirement",
			req:           `{key: kubernetes.io/hostname, operator: In, values: [x]}`,
			wantInMessage: []string{"kubernetes.io/hostname"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.NewReplacer("%REQ%", tc.req, "%EXTRA%", tc.extra).Replace(base)
			objs, err := framework.DecodeObjects([]byte(doc))
			if err != nil {
				t.Fatalf("test manifest: %v", err)
			}
			err = framework.Apply(context.Background(), env.Client, objs...)
			if err == nil {
				t.Fatalf("the API server accepted an invalid NodePool (%s)", tc.name)
			}
			for _, want := range tc.wantInMessage {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("rejection message %q does not mention %q", err.Error(), want)
				}
			}
		})
	}
}
