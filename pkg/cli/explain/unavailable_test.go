package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func TestApplyUnavailable(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	data, err := cloudprovider.EncodeUnavailableOfferings([]cloudprovider.UnavailableOffering{
		{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "on-demand", Reason: "InsufficientInstanceCapacity", Until: now.Add(time.Minute)},
		{InstanceType: "c5.large", Zone: "us-west-2a", CapacityType: "on-demand", Reason: "InsufficientInstanceCapacity", Until: now.Add(-time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: cloudprovider.UnavailableOfferingsConfigMap},
		Data: map[string]string{cloudprovider.UnavailableOfferingsKey: data}}
	types := func() instanceTypes {
		return instanceTypes{"default": {
			{Name: "m5.large", Offerings: []cloudprovider.Offering{{Zone: "us-west-2a", CapacityType: "on-demand", Available: true}}},
			{Name: "c5.large", Offerings: []cloudprovider.Offering{{Zone: "us-west-2a", CapacityType: "on-demand", Available: true}}},
		}}
	}
	o := &Options{Clock: clocktesting.NewFakePassiveClock(now)}

	its := types()
	warnings, err := o.applyUnavailable(ctx, fake.NewClientBuilder().WithScheme(s).WithObjects(cm).Build(), its, nil)
	if err != nil {
		t.Fatal(err)
	}
	if its["default"][0].Offerings[0].Available || !its["default"][1].Offerings[0].Available {
		t.Errorf("availability m5.large=%v c5.large=%v, want false (held unavailable) and true (its entry expired)",
			its["default"][0].Offerings[0].Available, its["default"][1].Offerings[0].Available)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "m5.large us-west-2a on-demand (InsufficientInstanceCapacity, until 12:01:00Z)") {
		t.Errorf("warnings %q, want one naming m5.large us-west-2a on-demand", warnings)
	}

	its = types()
	warnings, err = o.applyUnavailable(ctx, fake.NewClientBuilder().WithScheme(s).Build(), its, nil)
	if err != nil || len(warnings) != 0 || !its["default"][0].Offerings[0].Available {
		t.Errorf("without the ConfigMap: warnings %q, err %v, m5.large available %v; want nothing changed", warnings, err, its["default"][0].Offerings[0].Available)
	}

	bad := cm.DeepCopy()
	bad.Data[cloudprovider.UnavailableOfferingsKey] = "{"
	if _, err := o.applyUnavailable(ctx, fake.NewClientBuilder().WithScheme(s).WithObjects(bad).Build(), types(), nil); err == nil {
		t.Errorf("a malformed ConfigMap: want an error naming it")
	}
}
