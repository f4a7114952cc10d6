package zonalshift

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// fakeWatcher is a cloud provider's zonal shift side: shifts set by the test, one set of zones for every pool.
type fakeWatcher struct {
	cloudprovider.CloudProvider
	shifted []string
	zones   []cloudprovider.Zone
	fail    error
	updates int
}

func (f *fakeWatcher) ZonalShiftEnabled() bool { return true }
func (f *fakeWatcher) UpdateZonalShifts(context.Context) error {
	f.updates++
	return f.fail
}
func (f *fakeWatcher) ShiftedZoneIDs() []string { return f.shifted }
func (f *fakeWatcher) NodePoolZones(context.Context, *karpv1.NodePool) ([]cloudprovider.Zone, error) {
	return f.zones, nil
}

// wrapped decorates a cloud provider as the operator's metrics and overlay wrappers do.
type wrapped struct{ cloudprovider.CloudProvider }

func (w wrapped) Unwrap() cloudprovider.CloudProvider { return w.CloudProvider }

// TestNewControllerFindsTheWatcherUnderWrappers: the operator hands controllers the provider wrapped in metrics
// (and overlays); the controller must still find the zonal shift side.
func TestNewControllerFindsTheWatcherUnderWrappers(t *testing.T) {
	w := &fakeWatcher{}
	if c := NewController(deps.Deps{CloudProvider: wrapped{wrapped{w}}}); c.watcher != w {
		t.Errorf("watcher = %v, want the wrapped fake", c.watcher)
	}
}

var zones = []cloudprovider.Zone{{Name: "us-west-2a", ID: "usw2-az1"}, {Name: "us-west-2b", ID: "usw2-az2"}}

func TestAffected(t *testing.T) {
	cases := []struct {
		name   string
		pool   *karpv1.NodePool
		zoneID string
		want   bool
	}{
		{"no zone requirement", test.NodePool("a").NodeClass("default").Obj(), "usw2-az1", true},
		{"zone allowed by name", test.NodePool("a").NodeClass("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a").Obj(), "usw2-az1", true},
		{"zone excluded by name", test.NodePool("a").NodeClass("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b").Obj(), "usw2-az1", false},
		{"zone excluded by ID", test.NodePool("a").NodeClass("default").Requirement(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpNotIn, "usw2-az1").Obj(), "usw2-az1", false},
		{"zone not in the node class", test.NodePool("a").NodeClass("default").Obj(), "usw2-az3", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := Affected(c.pool, zones, c.zoneID); got != c.want {
				t.Errorf("Affected = %t, want %t", got, c.want)
			}
		})
	}
}

func events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			sort.Strings(out)
			return out
		}
	}
}

// TestPollPublishesTransitions: a new shift is published once on each NodePool that can launch into the zone,
// nothing while it lasts, its end once; a failed read publishes nothing.
func TestPollPublishesTransitions(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(
		test.NodePool("all").NodeClass("default").Obj(),
		test.NodePool("only-b").NodeClass("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b").Obj(),
	).Build()
	w := &fakeWatcher{zones: zones}
	rec := record.NewFakeRecorder(100)
	c := NewController(deps.Deps{Client: kube, CloudProvider: w, Recorder: rec, Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))})
	ctx := context.Background()
	steps := []struct {
		name    string
		shifted []string
		fail    error
		want    []string
	}{
		{"no shift", nil, nil, nil},
		{"shift away from az1", []string{"usw2-az1"}, nil, []string{
			"Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2a (usw2-az1) are unavailable for this NodePool"}},
		{"shift lasts", []string{"usw2-az1"}, nil, nil},
		{"read fails", nil, errors.New("throttled"), nil},
		{"az2 too", []string{"usw2-az1", "usw2-az2"}, nil, []string{
			"Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2b (usw2-az2) are unavailable for this NodePool",
			"Warning ZonalShiftActive Zonal shift detected: offerings in zone us-west-2b (usw2-az2) are unavailable for this NodePool"}},
		{"both end", nil, nil, []string{
			"Normal ZonalShiftCleared Zonal shift cleared: offerings in zone us-west-2a (usw2-az1) are restored for this NodePool",
			"Normal ZonalShiftCleared Zonal shift cleared: offerings in zone us-west-2b (usw2-az2) are restored for this NodePool",
			"Normal ZonalShiftCleared Zonal shift cleared: offerings in zone us-west-2b (usw2-az2) are restored for this NodePool"}},
	}
	for _, s := range steps {
		w.fail = s.fail
		if s.fail == nil {
			w.shifted = s.shifted
		}
		err := c.Poll(ctx)
		if (err != nil) != (s.fail != nil) || (err != nil && !strings.Contains(err.Error(), "throttled")) {
			t.Fatalf("%s: Poll = %v, want error %v", s.name, err, s.fail)
		}
		if diff := cmp.Diff(s.want, events(rec)); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", s.name, diff)
		}
	}
}
