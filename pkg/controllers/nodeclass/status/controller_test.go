package status_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/test"
)

type corev1Req = corev1.NodeSelectorRequirement

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// fakeResolver answers with fixed objects; subnets can be made to match nothing.
type fakeResolver struct {
	mu        sync.Mutex
	noSubnets bool
	deleted   []string
	// reservedOff turns the ReservedCapacity gate off; reservations are what reservations resolve to.
	reservedOff  bool
	reservations []awsv1.CapacityReservation
	// profileErr and validateErr are what ResolveInstanceProfile and ValidateNodeClass answer.
	profileErr, validateErr error
	// placementGroups maps the available placement groups' names to their ids; placementErr fails every lookup.
	placementGroups map[string]string
	placementErr    error
}

func (f *fakeResolver) PlacementGroupID(_ context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if f.placementErr != nil {
		return "", f.placementErr
	}
	if id, ok := f.placementGroups[nc.Spec.PlacementGroupSelector.Name]; ok {
		return id, nil
	}
	return "", &resolve.NoMatchError{What: "placement group", Field: "spec.placementGroupSelector", Terms: nc.Spec.PlacementGroupSelector.Name}
}

func (f *fakeResolver) ResolveCapacityReservations(context.Context, *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	return f.reservations, nil
}

func (f *fakeResolver) ReservedCapacityEnabled() bool { return !f.reservedOff }

func (f *fakeResolver) ResolveSubnets(_ context.Context, _ *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noSubnets {
		return nil, &resolve.NoMatchError{What: "subnets", Field: "subnetSelectorTerms", Terms: "[tags karpenter.sh/discovery=nowhere]"}
	}
	return []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a", ZoneID: "usw2-az1"}}, nil
}

func (f *fakeResolver) ResolveSecurityGroups(context.Context, *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	return []awsv1.SecurityGroup{{ID: "sg-1", Name: "nodes"}}, nil
}

func (f *fakeResolver) ResolveAMIs(context.Context, *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	return []awsv1.AMI{{ID: "ami-1", Name: "al2023", Requirements: []corev1Req{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}}}}, nil
}

func (f *fakeResolver) ResolveInstanceProfile(context.Context, *awsv1.EC2NodeClass) (string, error) {
	if f.profileErr != nil {
		return "", f.profileErr
	}
	return "profile-1", nil
}

func (f *fakeResolver) ValidateNodeClass(context.Context, *awsv1.EC2NodeClass) error {
	return f.validateErr
}

func (f *fakeResolver) DeleteNodeClassResources(_ context.Context, nc *awsv1.EC2NodeClass) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, nc.Name)
	return nil
}

func (f *fakeResolver) deletedNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deleted...)
}

// newManager starts a fresh API server and returns a manager on it (not yet running) and a direct client.
func newManager(t *testing.T) (manager.Manager, client.Client) {
	t.Helper()
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	skip := true
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr, env.Client
}

// run starts the manager until the test ends.
func run(t *testing.T, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// start runs the controller with resolver r against a fresh API server until the test ends.
func start(t *testing.T, r status.Resolver) client.Client {
	t.Helper()
	mgr, c := newManager(t)
	d := deps.Deps{Client: mgr.GetClient(), Clock: clock.RealClock{}}
	if err := status.New(d, r).Register(context.Background(), mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr)
	return c
}

// eventually polls cond until it returns "" or the deadline passes, then fails with its last message.
func eventually(t *testing.T, cond func() string) {
	t.Helper()
	msg := ""
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) {
			msg = cond()
			return msg == "", nil
		})
	if err != nil {
		t.Fatalf("condition not met within 20s: %s", msg)
	}
}

func TestStatusResolvedAndReady(t *testing.T) {
	c := start(t, &fakeResolver{})
	ctx := context.Background()
	if err := c.Create(ctx, test.EC2NodeClass("default", "demo").Obj()); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		nc := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return err.Error()
		}
		ready := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeReady)
		if ready == nil || ready.Status != metav1.ConditionTrue {
			return "not Ready: " + cmp.Diff(nil, nc.Status.Conditions)
		}
		if ready.ObservedGeneration != nc.Generation {
			return "Ready observedGeneration is stale"
		}
		want := awsv1.EC2NodeClassStatus{
			Subnets:         []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
			SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1", Name: "nodes"}},
			AMIs:            []awsv1.AMI{{ID: "ami-1", Name: "al2023", Requirements: []corev1Req{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"amd64"}}}}},
			InstanceProfile: "profile-1",
		}
		got := nc.Status
		got.Conditions = nil
		if d := cmp.Diff(want, got); d != "" {
			return "status (-want +got):\n" + d
		}
		if !strings.Contains(strings.Join(nc.Finalizers, ","), awsv1.TerminationFinalizer) {
			return "finalizer missing"
		}
		return ""
	})
}

func TestStatusNoSubnetsMessage(t *testing.T) {
	c := start(t, &fakeResolver{noSubnets: true})
	ctx := context.Background()
	if err := c.Create(ctx, test.EC2NodeClass("default", "nowhere").Obj()); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		nc := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return err.Error()
		}
		sub := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeSubnetsReady)
		ready := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeReady)
		if sub == nil || sub.Status != metav1.ConditionFalse || sub.Reason != awsv1.ReasonSubnetsNotFound {
			return "SubnetsReady not False/SubnetsNotFound"
		}
		if want := "no subnets matched subnetSelectorTerms [tags karpenter.sh/discovery=nowhere]"; sub.Message != want {
			return "message " + sub.Message
		}
		if ready == nil || ready.Status != metav1.ConditionFalse || !strings.Contains(ready.Message, "no subnets matched") {
			return "Ready does not carry the subnet failure"
		}
		return ""
	})
}

// TestStatusCapacityReservations: the reservations capacityReservationSelectorTerms select are in the status;
// with the ReservedCapacity gate off the status holds none and the condition says the terms are ignored, while
// the node class stays Ready for on-demand and spot.
func TestStatusCapacityReservations(t *testing.T) {
	end := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	resolved := []awsv1.CapacityReservation{{ID: "cr-0123456789abcdef0", AvailabilityZone: "us-west-2a", InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", OwnerID: "123456789012", ReservationType: awsv1.CapacityReservationTypeCapacityBlock,
		State: awsv1.CapacityReservationStateActive, EndTime: &end}}
	for _, tc := range []struct {
		name   string
		off    bool
		want   []awsv1.CapacityReservation
		reason string
	}{
		{name: "gate on", want: resolved, reason: karpv1.ReasonReady},
		{name: "gate off", off: true, reason: status.ReasonReservedCapacityDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, &fakeResolver{reservedOff: tc.off, reservations: resolved})
			ctx := context.Background()
			obj := test.EC2NodeClass("reserved", "demo").Obj()
			obj.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123456789abcdef0"}}
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() string {
				nc := &awsv1.EC2NodeClass{}
				if err := c.Get(ctx, client.ObjectKey{Name: "reserved"}, nc); err != nil {
					return err.Error()
				}
				cr := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeCapacityReservationsReady)
				if cr == nil || cr.Status != metav1.ConditionTrue || cr.Reason != tc.reason {
					return "CapacityReservationsReady not True/" + tc.reason + ": " + cmp.Diff(nil, nc.Status.Conditions)
				}
				if d := cmp.Diff(tc.want, nc.Status.CapacityReservations); d != "" {
					return "capacityReservations (-want +got):\n" + d
				}
				if ready := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeReady); ready == nil || ready.Status != metav1.ConditionTrue {
					return "Ready is not True"
				}
				return ""
			})
		})
	}
}

// TestStatusPlacementGroupAndLaunchFields: the launch fields Karpenter v1.14 applies (connection tracking, IPv4
// prefixes, network interfaces, CPU options) leave the node class valid, and PlacementGroupReady follows the
// selected group: True when it is available, False with Karpenter's reasons when it is missing or cannot be read.
func TestStatusPlacementGroupAndLaunchFields(t *testing.T) {
	cases := []struct {
		name       string
		group      string
		err        error
		wantStatus metav1.ConditionStatus
		wantReason string
		wantReady  metav1.ConditionStatus
	}{
		{"found", "training", nil, metav1.ConditionTrue, karpv1.ReasonReady, metav1.ConditionTrue},
		{"missing", "nowhere", nil, metav1.ConditionFalse, status.ReasonPlacementGroupNotFound, metav1.ConditionFalse},
		{"unreadable", "training", errors.New("UnauthorizedOperation"), metav1.ConditionFalse, status.ReasonPlacementGroupResolutionFailed, metav1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, &fakeResolver{placementGroups: map[string]string{"training": "pg-0123"}, placementErr: tc.err})
			ctx := context.Background()
			obj := test.EC2NodeClass("pg-"+tc.name, "demo").Obj()
			obj.Spec.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](120)}
			obj.Spec.IPPrefixCount = ptr.To[int32](1)
			obj.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To("enabled")}
			obj.Spec.NetworkInterfaces = []awsv1.NetworkInterface{
				{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
				{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
			}
			obj.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: tc.group}
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() string {
				nc := &awsv1.EC2NodeClass{}
				if err := c.Get(ctx, client.ObjectKey{Name: obj.Name}, nc); err != nil {
					return err.Error()
				}
				if v := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded); v == nil || v.Status != metav1.ConditionTrue {
					return "ValidationSucceeded not True: " + cmp.Diff(nil, nc.Status.Conditions)
				}
				pg := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
				if pg == nil || pg.Status != tc.wantStatus || pg.Reason != tc.wantReason {
					return "PlacementGroupReady: " + cmp.Diff(nil, nc.Status.Conditions)
				}
				if ready := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeReady); ready == nil || ready.Status != tc.wantReady {
					return "Ready is not " + string(tc.wantReady)
				}
				return ""
			})
		})
	}
}

func TestFinalizerWaitsForNodeClaims(t *testing.T) {
	r := &fakeResolver{}
	c := start(t, r)
	ctx := context.Background()
	if err := c.Create(ctx, test.EC2NodeClass("default", "demo").Obj()); err != nil {
		t.Fatal(err)
	}
	claim := test.NodeClaim("default-abcde", "default").Obj()
	if err := c.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		nc := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return err.Error()
		}
		if len(nc.Finalizers) == 0 {
			return "finalizer not added yet"
		}
		return ""
	})
	if err := c.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		nc := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return err.Error()
		}
		cond := meta.FindStatusCondition(nc.Status.Conditions, status.ConditionTypeTerminating)
		if cond == nil || cond.Reason != status.ReasonWaitingOnNodeClaims || !strings.Contains(cond.Message, "default-abcde") {
			return "no Terminating condition naming the NodeClaim"
		}
		return ""
	})
	if got := r.deletedNames(); len(got) != 0 {
		t.Fatalf("resources deleted while a NodeClaim uses the class: %v", got)
	}
	if err := c.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		err := c.Get(ctx, client.ObjectKey{Name: "default"}, &awsv1.EC2NodeClass{})
		if err == nil {
			return "EC2NodeClass still present"
		}
		if client.IgnoreNotFound(err) != nil {
			return err.Error()
		}
		return ""
	})
	// Cleanup is idempotent and may run again from a stale cache read; it must have run, and only for "default".
	got := r.deletedNames()
	if len(got) == 0 || slices.ContainsFunc(got, func(n string) bool { return n != "default" }) {
		t.Errorf("cleanup calls = %v, want one or more for default", got)
	}
}

// TestStatusValidationReasons: a refusal with a reason of its own (awsv1.ValidationError) is the reason of
// ValidationSucceeded=False, as in Karpenter v1.15; a missing spec.instanceProfile is InstanceProfileNotFound.
func TestStatusValidationReasons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		r      *fakeResolver
		reason string
	}{
		{"kubelet", &fakeResolver{validateErr: &awsv1.ValidationError{Reason: awsv1.ReasonUnsupportedKubeletConfiguration, Message: "spec.kubelet: no"}},
			awsv1.ReasonUnsupportedKubeletConfiguration},
		{"expressions", &fakeResolver{validateErr: &awsv1.ValidationError{Reason: awsv1.ReasonKubeletExpressionsDisabled, Message: "gate off"}},
			awsv1.ReasonKubeletExpressionsDisabled},
		{"plain error", &fakeResolver{validateErr: errors.New("userData: bad")}, karpv1.ReasonValidationFailed},
		{"instance profile", &fakeResolver{profileErr: &awsv1.ValidationError{Reason: awsv1.ReasonInstanceProfileNotFound, Message: "instance profile \"p\" (spec.instanceProfile) does not exist"}},
			awsv1.ReasonInstanceProfileNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.r)
			ctx := context.Background()
			if err := c.Create(ctx, test.EC2NodeClass("reasons", "demo").Obj()); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() string {
				nc := &awsv1.EC2NodeClass{}
				if err := c.Get(ctx, client.ObjectKey{Name: "reasons"}, nc); err != nil {
					return err.Error()
				}
				v := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
				if v == nil || v.Status != metav1.ConditionFalse || v.Reason != tc.reason {
					return "ValidationSucceeded not False/" + tc.reason + ": " + cmp.Diff(nil, nc.Status.Conditions)
				}
				return ""
			})
		})
	}
}
