package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestRecordRegistration(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("default").Obj()
	np.UID = "np-uid"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).WithObjects(np).Build()
	c := NewController(deps.Deps{Client: kube, RegistrationHealth: deps.NewRegistrationHealth()})
	ctx := context.Background()
	owned := func(launched bool) *karpv1.NodeClaim {
		nc := test.NodeClaim("nc", "default").Obj()
		nc.OwnerReferences = []metav1.OwnerReference{{APIVersion: karpv1.GroupVersion.String(), Kind: "NodePool", Name: "default", UID: np.UID}}
		if launched {
			nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
		} else {
			nc.SetFalse(karpv1.ConditionTypeLaunched, karpv1.ReasonNodeClassNotReady, "EC2NodeClass default has no subnets")
		}
		return nc
	}
	condition := func() string {
		t.Helper()
		got := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, got); err != nil {
			t.Fatal(err)
		}
		cond := got.GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy)
		if cond == nil {
			return "none"
		}
		return string(cond.Status) + "/" + cond.Reason
	}
	steps := []struct {
		name       string
		nc         *karpv1.NodeClaim
		registered bool
		want       string
	}{
		{"a nodeclaim not owned by the nodepool does not count", test.NodeClaim("stray", "default").Obj(), false, "none"},
		{"first registration", owned(true), true, "True/NodeRegistrationHealthy"},
		{"one failure of two", owned(true), false, "True/NodeRegistrationHealthy"},
		{"two failures", owned(true), false, "False/RegistrationFailed"},
		{"two failures in the last three", owned(true), true, "False/RegistrationFailed"},
		{"two failures in the last four still", owned(true), true, "False/RegistrationFailed"},
		{"one failure in the last four", owned(true), true, "True/NodeRegistrationHealthy"},
		{"a failure", owned(false), false, "True/NodeRegistrationHealthy"},
		{"launch failures give their reason", owned(false), false, "False/NodeClassNotReady"},
	}
	for _, s := range steps {
		if err := c.recordRegistration(ctx, s.nc, s.registered); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := condition(); got != s.want {
			t.Errorf("%s: NodeRegistrationHealthy %s, want %s", s.name, got, s.want)
		}
	}
}

// TestRecordRegistrationConcurrentOnStaleCache: the registrations of a scale-out record at once, reading the
// NodePool from a cache that does not show the first one's write yet: the condition is written once and no
// write is refused.
func TestRecordRegistrationConcurrentOnStaleCache(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("default").Obj()
	np.UID = "np-uid"
	np.SetTrue(karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeValidationSucceeded)
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).WithObjects(np).Build()
	stale := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "default"}, stale); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var writes, refused int
	cached := interceptor.NewClient(kube, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if p, ok := obj.(*karpv1.NodePool); ok {
				stale.DeepCopyInto(p)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			mu.Lock()
			defer mu.Unlock()
			writes++
			if err != nil {
				refused++
			}
			return err
		},
	})
	c := NewController(deps.Deps{Client: cached, RegistrationHealth: deps.NewRegistrationHealth()})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := test.NodeClaim(fmt.Sprintf("nc-%d", i), "default").Obj()
			nc.OwnerReferences = []metav1.OwnerReference{{APIVersion: karpv1.GroupVersion.String(), Kind: "NodePool", Name: "default", UID: np.UID}}
			nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched)
			if err := c.recordRegistration(context.Background(), nc, true); err != nil {
				t.Errorf("recording %s: %v", nc.Name, err)
			}
		}()
	}
	wg.Wait()
	if writes != 1 || refused != 0 {
		t.Errorf("%d NodePool status writes, %d refused; want 1 and 0", writes, refused)
	}
	got := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "default"}, got); err != nil {
		t.Fatal(err)
	}
	if !got.IsTrue(karpv1.ConditionTypeNodeRegistrationHealthy) {
		t.Errorf("NodeRegistrationHealthy not set: %+v", got.Status.Conditions)
	}
}
