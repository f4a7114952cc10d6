package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/leaderlease"
)

// Event reasons of the leader-lease watch, on the Lease another autoscaler holds.
const (
	// ReasonWaitingForLeaderLease: this replica does not lead while another autoscaler holds the Lease.
	ReasonWaitingForLeaderLease = "WaitingForLeaderLease"
	// ReasonLeaderLeaseLapsed: the other autoscaler released the Lease or stopped renewing it.
	ReasonLeaderLeaseLapsed = "LeaderLeaseLapsed"
	// ReasonForeignLeaderWhileLeading: another autoscaler leads while this replica does; this replica stops.
	ReasonForeignLeaderWhileLeading = "ForeignLeaderWhileLeading"
)

// leaseWatchInterval is how often the watch reads the Leases: client-go's leader-election retry period.
const leaseWatchInterval = 2 * time.Second

// ErrForeignLeader stops the controller: another autoscaler holds a leader Lease while this replica leads (or
// runs without leader election), so both would provision and disrupt.
var ErrForeignLeader = errors.New("another autoscaler leads")

// LeaseWatch keeps this replica from leading while another autoscaler holds a leader Lease, and says so. Every
// interval it reads the Leases named LEADER_ELECTION_NAME in all namespaces, and the Lease older Dovetail
// releases held (leaderlease.LegacyName) in the controller's namespace; a Lease counts as held while its holder
// renews it (leaderlease.Tracker). Holders that are not Dovetail replicas sharing the Lease are foreign:
//   - the shared Lease (Name in Namespace) held by Karpenter: leader election itself waits; the watch reports it;
//   - a Lease of that name in another namespace (Karpenter installed elsewhere), or the legacy Lease held by an
//     older release: Wait, which the leader-election lock calls before acquiring (gatedLock), blocks until none
//     is left;
//   - any of them while this replica leads, or runs without leader election: Start returns ErrForeignLeader,
//     which stops the controller (and releases the Lease); restarted, it waits.
//
// Each hold is reported once when it starts (a log line and an event on the Lease) and once when it lapses;
// dovetail_leader_election_waiting counts the current holds by kind. It runs on every replica, leader or not.
type LeaseWatch struct {
	Reader client.Reader
	// Identity is this replica's holder identity.
	Identity string
	// Name and Namespace are this replica's leader Lease (LEADER_ELECTION_NAME, LEADER_ELECTION_NAMESPACE or the
	// controller's namespace).
	Name, Namespace string
	// LegacyNamespace is where older releases held leaderlease.LegacyName: the controller's namespace.
	LegacyNamespace string
	// LeaderElection is false under DISABLE_LEADER_ELECTION: the replica acts from the start.
	LeaderElection bool
	// Elected is closed once this replica leads (manager.Elected()).
	Elected  <-chan struct{}
	Clock    clock.WithTicker
	Interval time.Duration
	Logger   logr.Logger
	// Recorder and Waiting may be set after the watch is made, before Start.
	Recorder record.EventRecorder
	Waiting  *prometheus.GaugeVec

	mu      sync.Mutex
	tracker *leaderlease.Tracker
	checked bool
	// gating are the current holds Wait waits on (all but the shared Lease, which leader election handles).
	gating []leaderlease.Hold
	wake   chan struct{}
	// reported are the holds announced, by Lease key, with the Lease as last read (for the lapse event).
	reported   map[string]reportedHold
	listDenied bool
	lastErr    string
}

type reportedHold struct {
	hold  leaderlease.Hold
	lease *coordinationv1.Lease
}

func (w *LeaseWatch) init() {
	if w.tracker == nil {
		w.tracker = leaderlease.NewTracker(w.Clock)
		w.wake = make(chan struct{})
		w.reported = map[string]reportedHold{}
	}
}

// NeedLeaderElection is false: the watch runs while the replica waits.
func (w *LeaseWatch) NeedLeaderElection() bool { return false }

// Start checks the Leases every interval until ctx ends; it returns ErrForeignLeader (wrapped) when another
// autoscaler holds a Lease while this replica leads.
func (w *LeaseWatch) Start(ctx context.Context) error {
	w.mu.Lock()
	w.init()
	w.mu.Unlock()
	for _, k := range []leaderlease.HolderKind{leaderlease.KindKarpenter, leaderlease.KindOlderDovetail} {
		if w.Waiting != nil {
			w.Waiting.WithLabelValues(string(k)).Set(0)
		}
	}
	interval := w.Interval
	if interval <= 0 {
		interval = leaseWatchInterval
	}
	t := w.Clock.NewTicker(interval)
	defer t.Stop()
	for {
		if err := w.Step(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// leading reports whether this replica acts: it leads, or runs without leader election.
func (w *LeaseWatch) leading() bool {
	if !w.LeaderElection {
		return true
	}
	select {
	case <-w.Elected:
		return true
	default:
		return false
	}
}

// Step reads the Leases once and reports what changed. A read error is logged (once until it changes) and
// keeps the previous state.
func (w *LeaseWatch) Step(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.init()
	holds, leases, err := w.read(ctx)
	if err != nil {
		if err.Error() != w.lastErr {
			w.Logger.Error(err, "reading the leader leases of other autoscalers; keeping the last known state", "lease", w.Namespace+"/"+w.Name)
			w.lastErr = err.Error()
		}
		return nil
	}
	w.lastErr = ""
	leading := w.leading()
	if leading {
		// A replica that acts stops only for a holder known to be alive: a Lease left by a holder that died
		// without releasing it (seen for the first time, its renewal old) does not count.
		alive := holds[:0]
		for _, h := range holds {
			if h.Renewing {
				alive = append(alive, h)
			}
		}
		holds = alive
	}
	current := map[string]leaderlease.Hold{}
	var gating []leaderlease.Hold
	counts := map[leaderlease.HolderKind]int{}
	for _, h := range holds {
		current[h.Key()] = h
		counts[h.Kind]++
		if h.Namespace != w.Namespace || h.Name != w.Name {
			gating = append(gating, h)
		}
	}
	// Lapses first, so a holder that changed is announced after the old one lapsed.
	var keys []string
	for k := range w.reported {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := w.reported[k]
		if h, ok := current[k]; ok && h.Holder == r.hold.Holder {
			continue
		}
		delete(w.reported, k)
		w.Logger.Info(r.hold.Kind.Who()+" no longer holds the leader lease: it lapsed or was released", "lease", k, "holder", r.hold.Holder)
		w.event(r.lease, corev1.EventTypeNormal, ReasonLeaderLeaseLapsed, "%s (holder %s) no longer holds this lease; Dovetail replica %s no longer waits on it", r.hold.Kind.Who(), r.hold.Holder, w.Identity)
	}
	var foreign []string
	for _, h := range holds {
		if leading {
			foreign = append(foreign, h.String())
		}
		if _, ok := w.reported[h.Key()]; ok {
			continue
		}
		w.reported[h.Key()] = reportedHold{hold: h, lease: leases[h.Key()]}
		switch {
		case leading:
			w.Logger.Error(fmt.Errorf("%w: %s", ErrForeignLeader, h), h.Kind.Who()+" holds a leader lease while this replica acts; Dovetail stops so that only one autoscaler provisions and disrupts",
				"lease", h.Key(), "holder", h.Holder)
			w.event(leases[h.Key()], corev1.EventTypeWarning, ReasonForeignLeaderWhileLeading, "%s (holder %s) holds this lease while Dovetail replica %s acts; Dovetail stops", h.Kind.Who(), h.Holder, w.Identity)
		case h.Namespace == w.Namespace && h.Name == w.Name:
			w.Logger.Info(h.Kind.Who()+" holds the leader lease; Dovetail waits and neither provisions nor disrupts until it lapses",
				"lease", h.Key(), "holder", h.Holder)
			w.event(leases[h.Key()], corev1.EventTypeNormal, ReasonWaitingForLeaderLease, "%s (holder %s) holds this lease; Dovetail replica %s waits and neither provisions nor disrupts until it lapses", h.Kind.Who(), h.Holder, w.Identity)
		default:
			w.Logger.Info(h.Kind.Who()+" holds a leader lease Dovetail does not share; Dovetail waits and neither provisions nor disrupts until it lapses",
				"lease", h.Key(), "holder", h.Holder, "own-lease", w.Namespace+"/"+w.Name)
			w.event(leases[h.Key()], corev1.EventTypeNormal, ReasonWaitingForLeaderLease, "%s (holder %s) holds this lease; Dovetail replica %s (lease %s/%s) waits and neither provisions nor disrupts until it lapses", h.Kind.Who(), h.Holder, w.Identity, w.Namespace, w.Name)
		}
	}
	if w.Waiting != nil {
		for _, k := range []leaderlease.HolderKind{leaderlease.KindKarpenter, leaderlease.KindOlderDovetail} {
			w.Waiting.WithLabelValues(string(k)).Set(float64(counts[k]))
		}
	}
	w.checked = true
	w.gating = gating
	close(w.wake)
	w.wake = make(chan struct{})
	if len(foreign) > 0 {
		return fmt.Errorf("%w: %v", ErrForeignLeader, foreign)
	}
	return nil
}

// Holds returns the holds that keep this replica from leading at the last check.
func (w *LeaseWatch) Holds() []leaderlease.Hold {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []leaderlease.Hold
	for _, r := range w.reported {
		out = append(out, r.hold)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Wait blocks until the watch has read the Leases once and no foreign holder of a Lease other than the shared one
// is left, or ctx ends. It reports whether it blocked.
func (w *LeaseWatch) Wait(ctx context.Context) (bool, error) {
	for blocked := false; ; blocked = true {
		w.mu.Lock()
		w.init()
		if w.checked && len(w.gating) == 0 {
			w.mu.Unlock()
			return blocked, nil
		}
		wake := w.wake
		w.mu.Unlock()
		select {
		case <-ctx.Done():
			return blocked, ctx.Err()
		case <-wake:
		}
	}
}

// read returns the foreign holds, sorted by Lease, and the Leases read by key.
func (w *LeaseWatch) read(ctx context.Context) ([]leaderlease.Hold, map[string]*coordinationv1.Lease, error) {
	var leases []*coordinationv1.Lease
	if !w.listDenied {
		list := &coordinationv1.LeaseList{}
		// Listing by name is what RBAC's resourceNames can grant (the chart's ClusterRole grants only this name).
		err := w.Reader.List(ctx, list, client.MatchingFields{"metadata.name": w.Name})
		switch {
		case apierrors.IsForbidden(err):
			w.listDenied = true
			w.Logger.Error(err, "cannot list leader leases in all namespaces: an autoscaler holding a lease of this name in another namespace goes unnoticed; grant list on leases named it (the chart's ClusterRole does)",
				"lease-name", w.Name)
		case err != nil:
			return nil, nil, fmt.Errorf("listing leases named %s: %w", w.Name, err)
		default:
			for i := range list.Items {
				leases = append(leases, &list.Items[i])
			}
		}
	}
	get := func(ns, name string) error {
		l := &coordinationv1.Lease{}
		err := w.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, l)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading lease %s/%s: %w", ns, name, err)
		}
		leases = append(leases, l)
		return nil
	}
	if w.listDenied {
		if err := get(w.Namespace, w.Name); err != nil {
			return nil, nil, err
		}
	}
	if w.LegacyNamespace != "" && (w.Name != leaderlease.LegacyName || w.LegacyNamespace != w.Namespace) {
		if err := get(w.LegacyNamespace, leaderlease.LegacyName); err != nil {
			return nil, nil, err
		}
	}
	byKey := map[string]*coordinationv1.Lease{}
	keys := map[string]bool{}
	var holds []leaderlease.Hold
	for _, l := range leases {
		key := l.Namespace + "/" + l.Name
		keys[key] = true
		byKey[key] = l
		if !w.tracker.Held(l) {
			continue
		}
		h := leaderlease.HoldOf(l)
		if h.Holder == w.Identity || h.Kind == leaderlease.KindDovetail {
			continue
		}
		h.Renewing = w.tracker.Renewing(l)
		holds = append(holds, h)
	}
	w.tracker.Keep(keys)
	sort.Slice(holds, func(i, j int) bool { return holds[i].Key() < holds[j].Key() })
	return holds, byKey, nil
}

func (w *LeaseWatch) event(l *coordinationv1.Lease, eventType, reason, format string, args ...any) {
	if w.Recorder == nil || l == nil {
		return
	}
	w.Recorder.Eventf(l, eventType, reason, format, args...)
}
