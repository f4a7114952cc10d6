package operator

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock returns a fixed record (or error) from Get.
type fakeLock struct {
	resourcelock.Interface
	rec  *resourcelock.LeaderElectionRecord
	err  error
	gets int
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	f.gets++
	return f.rec, nil, f.err
}

func (f *fakeLock) Identity() string { return selfIdentity }

type countingGate struct {
	waits   int
	blocked bool
	err     error
}

func (g *countingGate) Wait(context.Context) (bool, error) {
	g.waits++
	return g.blocked, g.err
}

// TestGatedLock: Get waits on the gate whenever this replica could acquire (the Lease is missing or held by
// someone else), never while it holds the Lease (renewals), and an unanswered gate stops the acquisition.
func TestGatedLock(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "karpenter-leader-election")
	for _, tc := range []struct {
		what      string
		rec       *resourcelock.LeaderElectionRecord
		err       error
		blocked   bool
		gateErr   error
		wantWaits int
		wantGets  int
		wantErr   bool
	}{
		{"held by this replica: a renewal", &resourcelock.LeaderElectionRecord{HolderIdentity: selfIdentity}, nil, false, nil, 0, 1, false},
		{"held by Karpenter, gate open", &resourcelock.LeaderElectionRecord{HolderIdentity: karpenterHolder}, nil, false, nil, 1, 1, false},
		{"released, the gate blocked: read again", &resourcelock.LeaderElectionRecord{}, nil, true, nil, 1, 2, false},
		{"missing, the gate blocked", nil, notFound, true, nil, 1, 2, true},
		{"missing, gate open", nil, notFound, false, nil, 1, 1, true},
		{"read error: no wait", nil, errors.New("boom"), false, nil, 0, 1, true},
		{"the gate gives up (shutdown)", &resourcelock.LeaderElectionRecord{}, nil, true, context.Canceled, 1, 1, true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			inner := &fakeLock{rec: tc.rec, err: tc.err}
			g := &countingGate{blocked: tc.blocked, err: tc.gateErr}
			l := &gatedLock{Interface: inner, gate: g}
			_, _, err := l.Get(context.Background())
			if g.waits != tc.wantWaits || inner.gets != tc.wantGets || (err != nil) != tc.wantErr {
				t.Errorf("waits %d gets %d err %v, want waits %d gets %d error %v", g.waits, inner.gets, err, tc.wantWaits, tc.wantGets, tc.wantErr)
			}
			if tc.gateErr != nil && !errors.Is(err, tc.gateErr) {
				t.Errorf("error %v does not wrap the gate's %v", err, tc.gateErr)
			}
		})
	}
}
