package operator

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/dovetail/dovetail/pkg/leaderlease"
)

// leaderRenewDeadline is controller-runtime's default renew deadline; the lock's client times out at half of it,
// as controller-runtime's own lock does, so one hung request cannot cost the lease.
const leaderRenewDeadline = 10 * time.Second

// gate is what the leader-election lock waits on before it may acquire (LeaseWatch). Wait reports whether it
// had to block.
type gate interface {
	Wait(ctx context.Context) (bool, error)
}

// gatedLock is the Lease lock of leader election, except that before this replica may take the Lease (it is
// free, expired, or held by someone else) Get waits on the gate. client-go's elector calls Get before every
// acquisition attempt and retries on its own, so a replica blocked here simply does not lead; renewals of a
// Lease this replica holds pass straight through.
type gatedLock struct {
	resourcelock.Interface
	gate gate
}

func (l *gatedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec.HolderIdentity == l.Identity() {
		return rec, raw, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return rec, raw, err
	}
	blocked, werr := l.gate.Wait(ctx)
	if werr != nil {
		return nil, nil, fmt.Errorf("waiting for other autoscalers' leader leases to lapse: %w", werr)
	}
	if !blocked {
		return rec, raw, err
	}
	// The record read before the wait is stale: read it again.
	return l.Interface.Get(ctx)
}

// recorderRef is the lock's event recorder, set once the manager (which owns the recorder) exists.
type recorderRef struct {
	mu  sync.Mutex
	rec resourcelock.EventRecorder
}

func (r *recorderRef) set(rec resourcelock.EventRecorder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec = rec
}

func (r *recorderRef) Eventf(obj runtime.Object, eventType, reason, message string, args ...any) {
	r.mu.Lock()
	rec := r.rec
	r.mu.Unlock()
	if rec != nil {
		rec.Eventf(obj, eventType, reason, message, args...)
	}
}

// newIdentity returns this replica's holder identity: leaderlease.Identity of the host name and a new UUID.
func newIdentity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("reading the host name for the leader-election identity: %w", err)
	}
	return leaderlease.Identity(host, string(uuid.NewUUID())), nil
}

// newLeaderLock builds the Lease lock namespace/name for identity, gated by g.
func newLeaderLock(cfg *rest.Config, namespace, name, identity string, g gate, events resourcelock.EventRecorder) (resourcelock.Interface, error) {
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = leaderRenewDeadline / 2
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader-election client: %w", err)
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the leader-election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, core, coord,
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: events})
	if err != nil {
		return nil, fmt.Errorf("creating the leader-election lock %s/%s: %w", namespace, name, err)
	}
	return &gatedLock{Interface: lock, gate: g}, nil
}
