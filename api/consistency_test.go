package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestLabelPolicyMatchesCRD checks that the Go label policy (awsv1.LabelPolicy) and the CRD rules agree on
// every key below, for NodePool requirements, NodePool template labels and NodeClaim requirements.
func TestLabelPolicyMatchesCRD(t *testing.T) {
	keys := []string{
		"kubernetes.io/arch", "kubernetes.io/os", "kubernetes.io/hostname", "kubernetes.io/custom",
		"node.kubernetes.io/instance-type", "node.kubernetes.io/anything", "beta.kubernetes.io/arch",
		"topology.kubernetes.io/zone", "topology.kubernetes.io/rack", "node-restriction.kubernetes.io/x",
		"k8s.io/x", "foo.k8s.io/x", "kops.k8s.io/instancegroup", "karpenter.sh/capacity-type",
		"karpenter.sh/nodepool", "karpenter.sh/initialized", "karpenter.k8s.aws/instance-family",
		"karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/nope", "topology.k8s.aws/zone-id",
		"example.com/team", "team", "notkubernetes.io/x",
	}
	policy := awsv1.LabelPolicy()
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := manifest(t, nodePoolBase, fmt.Sprintf(`spec: {template: {spec: {requirements: [{key: %q, operator: Exists}]}}}`, key))
			req.SetName(objectName("req-" + key))
			reqErr := kube.Create(ctx, req, client.DryRunAll)
			if goErr := policy.ValidateNodePoolRequirementKey(key); (goErr == nil) != (reqErr == nil) {
				t.Errorf("NodePool requirement key %q: Go policy says %v, API server says %v", key, goErr, reqErr)
			}
			claim := manifest(t, nodeClaimBase, fmt.Sprintf(`spec: {requirements: [{key: %q, operator: Exists}]}`, key))
			claim.SetName(objectName("claim-" + key))
			claimErr := kube.Create(ctx, claim, client.DryRunAll)
			if goErr := policy.ValidateRequirementKey(key); (goErr == nil) != (claimErr == nil) {
				t.Errorf("NodeClaim requirement key %q: Go policy says %v, API server says %v", key, goErr, claimErr)
			}
			lbl := manifest(t, nodePoolBase, fmt.Sprintf(`spec: {template: {metadata: {labels: {%q: v}}}}`, key))
			lbl.SetName(objectName("lbl-" + key))
			lblErr := kube.Create(ctx, lbl, client.DryRunAll)
			if goErr := policy.ValidateTemplateLabelKey(key); (goErr == nil) != (lblErr == nil) {
				t.Errorf("template label %q: Go policy says %v, API server says %v", key, goErr, lblErr)
			}
		})
	}
}

// TestCRDNames checks the names, short names, scope and printer columns users see in kubectl.
func TestCRDNames(t *testing.T) {
	type summary struct {
		Kind, Scope string
		ShortNames  []string
		Columns     []string
		Subresource []string
	}
	want := map[string]summary{
		"karpenter.sh_nodepools.yaml": {Kind: "NodePool", Scope: "Cluster",
			Columns: []string{"NodeClass", "Nodes", "Ready", "Age", "Weight", "CPU", "Memory"}, Subresource: []string{"status", "scale"}},
		"karpenter.sh_nodeclaims.yaml": {Kind: "NodeClaim", Scope: "Cluster",
			Columns: []string{"Type", "Capacity", "Zone", "Node", "Ready", "Age", "ImageID", "ID", "NodePool", "NodeClass", "Drifted"}, Subresource: []string{"status"}},
		"karpenter.k8s.aws_ec2nodeclasses.yaml": {Kind: "EC2NodeClass", Scope: "Cluster", ShortNames: []string{"ec2nc", "ec2ncs"},
			Columns: []string{"Ready", "Age", "Role"}, Subresource: []string{"status"}},
	}
	for file, w := range want {
		raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "crd", file))
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: want a single stored version v1, got %+v", file, crd.Spec.Versions)
			continue
		}
		v := crd.Spec.Versions[0]
		got := summary{Kind: crd.Spec.Names.Kind, Scope: string(crd.Spec.Scope), ShortNames: crd.Spec.Names.ShortNames}
		for _, c := range v.AdditionalPrinterColumns {
			got.Columns = append(got.Columns, c.Name)
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			got.Subresource = append(got.Subresource, "status")
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			got.Subresource = append(got.Subresource, "scale")
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}
	if karpv1.Group != "karpenter.sh" || awsv1.Group != "karpenter.k8s.aws" {
		t.Errorf("groups are %q and %q", karpv1.Group, awsv1.Group)
	}
}
