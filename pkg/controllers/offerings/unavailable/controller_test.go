package unavailable

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

type lister struct {
	offerings []cloudprovider.UnavailableOffering
}

func (l *lister) UnavailableOfferings() []cloudprovider.UnavailableOffering { return l.offerings }

// The list is written at the first pass (even empty), rewritten when it changes, and not written again while it
// stays the same.
func TestPublishesUnavailableOfferings(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	l := &lister{}
	c := NewController(deps.Deps{KubeClient: kube, UnavailableOfferings: l, Namespace: "dovetail"})
	writes := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "create" || a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}
	read := func() []cloudprovider.UnavailableOffering {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps("dovetail").Get(ctx, cloudprovider.UnavailableOfferingsConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cloudprovider.DecodeUnavailableOfferings(cm.Data[cloudprovider.UnavailableOfferingsKey], time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := read(); len(got) != 0 || writes() != 1 {
		t.Fatalf("first pass: %v in the ConfigMap after %d writes, want an empty list written once", got, writes())
	}
	l.offerings = []cloudprovider.UnavailableOffering{{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot",
		Reason: "InsufficientInstanceCapacity", Until: time.Date(2026, 11, 25, 12, 3, 0, 0, time.UTC)}}
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.offerings, read()); diff != "" {
		t.Errorf("published after a refusal (-want +got):\n%s", diff)
	}
	kube.ClearActions()
	if err := c.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if n := writes(); n != 0 {
		t.Errorf("%d writes for an unchanged list, want none", n)
	}
}
