package instanceprofilegc

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// collectingCloud is a cloud provider that collects instance profiles, recording the classes it was given.
type collectingCloud struct {
	*fake.CloudProvider
	classes []string
}

func (c *collectingCloud) CollectInstanceProfiles(_ context.Context, classes []awsv1.EC2NodeClass) ([]string, error) {
	for _, nc := range classes {
		c.classes = append(c.classes, nc.Name)
	}
	return []string{"dovetail_0123456789abcdef"}, nil
}

// TestCollectsWithTheNodeClasses: a pass hands the cloud provider every EC2NodeClass; with ISOLATED_VPC=true, or
// a cloud provider that cannot collect, nothing is called.
func TestCollectsWithTheNodeClasses(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC))
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		test.EC2NodeClass("b", "dovetail").Obj(), test.EC2NodeClass("a", "dovetail").Obj()).Build()
	for _, tc := range []struct {
		name        string
		isolated    bool
		collector   bool
		wantClasses []string
		wantDeleted []string
	}{
		{"collects", false, true, []string{"a", "b"}, []string{"dovetail_0123456789abcdef"}},
		{"isolated VPC", true, true, nil, nil},
		{"no collector", false, false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := &collectingCloud{CloudProvider: fake.New(clk)}
			d := deps.Deps{Client: kube, Clock: clk, Metrics: metrics.NewForTest(), Settings: &settings.Settings{IsolatedVPC: tc.isolated}}
			d.CloudProvider = cloud
			if !tc.collector {
				d.CloudProvider = cloud.CloudProvider
			}
			deleted, err := NewController(d).Reconcile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantClasses, cloud.classes); diff != "" {
				t.Errorf("classes handed over (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDeleted, deleted); diff != "" {
				t.Errorf("deleted (-want +got):\n%s", diff)
			}
		})
	}
}
