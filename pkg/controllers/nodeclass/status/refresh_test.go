package status_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// countingResolver counts the resolutions of each part.
type countingResolver struct {
	fakeResolver
	mu    sync.Mutex
	calls map[string]int
}

func (r *countingResolver) count(part string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[part]++
}

func (r *countingResolver) ResolveSubnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	r.count("subnets")
	return r.fakeResolver.ResolveSubnets(ctx, nc)
}

func (r *countingResolver) ResolveSecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	r.count("securityGroups")
	return r.fakeResolver.ResolveSecurityGroups(ctx, nc)
}

func (r *countingResolver) ResolveAMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	r.count("amis")
	return r.fakeResolver.ResolveAMIs(ctx, nc)
}

func (r *countingResolver) ResolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	r.count("instanceProfile")
	return r.fakeResolver.ResolveInstanceProfile(ctx, nc)
}

func (r *countingResolver) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.calls {
		out[k] = v
	}
	return out
}

// TestRefreshIntervals: subnets, security groups and AMIs are resolved again on SUBNET_REFRESH_INTERVAL,
// SECURITY_GROUP_REFRESH_INTERVAL and AMI_REFRESH_INTERVAL, the instance profile every 5 minutes, a spec change
// resolves everything at once, and the requeue is the time to the next part due.
func TestRefreshIntervals(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&awsv1.EC2NodeClass{}).
		WithObjects(test.EC2NodeClass("default", "demo").Obj()).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &settings.Settings{SubnetRefreshInterval: time.Minute, SecurityGroupRefreshInterval: 2 * time.Minute, AMIRefreshInterval: 3 * time.Minute}
	r := &countingResolver{calls: map[string]int{}}
	c := status.New(deps.Deps{Client: kube, Clock: clk, Settings: s}, r)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}

	steps := []struct {
		advance     time.Duration
		want        map[string]int
		wantRequeue time.Duration
	}{
		{0, map[string]int{"subnets": 1, "securityGroups": 1, "amis": 1, "instanceProfile": 1}, time.Minute},
		{30 * time.Second, map[string]int{"subnets": 1, "securityGroups": 1, "amis": 1, "instanceProfile": 1}, 30 * time.Second},
		{30 * time.Second, map[string]int{"subnets": 2, "securityGroups": 1, "amis": 1, "instanceProfile": 1}, time.Minute},
		{time.Minute, map[string]int{"subnets": 3, "securityGroups": 2, "amis": 1, "instanceProfile": 1}, time.Minute},
		{time.Minute, map[string]int{"subnets": 4, "securityGroups": 2, "amis": 2, "instanceProfile": 1}, time.Minute},
		{2 * time.Minute, map[string]int{"subnets": 5, "securityGroups": 3, "amis": 2, "instanceProfile": 2}, time.Minute},
	}
	for i, st := range steps {
		clk.Step(st.advance)
		res, err := c.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if diff := cmp.Diff(st.want, r.snapshot()); diff != "" {
			t.Errorf("step %d: resolutions (-want +got):\n%s", i, diff)
		}
		if res.RequeueAfter != st.wantRequeue {
			t.Errorf("step %d: requeue after %s, want %s", i, res.RequeueAfter, st.wantRequeue)
		}
	}

	// A spec change (new generation) resolves every part at once.
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Generation++
	if err := kube.Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"subnets": 6, "securityGroups": 4, "amis": 3, "instanceProfile": 3}
	if diff := cmp.Diff(want, r.snapshot()); diff != "" {
		t.Errorf("after a spec change: resolutions (-want +got):\n%s", diff)
	}

	// A copy that does not show a part's condition True (the cache behind a status patch) resolves that part
	// again, though its interval has not passed: the status patch writes the copy's conditions back.
	if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	var kept []metav1.Condition
	for _, cond := range nc.Status.Conditions {
		if cond.Type != awsv1.ConditionTypeSubnetsReady {
			kept = append(kept, cond)
		}
	}
	nc.Status.Conditions = kept
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	want["subnets"]++
	if diff := cmp.Diff(want, r.snapshot()); diff != "" {
		t.Errorf("after a copy without SubnetsReady: resolutions (-want +got):\n%s", diff)
	}
}
