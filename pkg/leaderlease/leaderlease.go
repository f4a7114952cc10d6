// Package leaderlease tells who holds a leader-election Lease (a Dovetail replica, Karpenter, or a Dovetail
// release from before the shared Lease) and whether the holder still renews it. The controller waits on such
// holders (pkg/operator); dovetailctl doctor and explain report them.
package leaderlease

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/clock"
)

const (
	// DefaultName is Karpenter's leader Lease name, LEADER_ELECTION_NAME's default: Dovetail and Karpenter
	// compete for the same Lease, so at most one of them leads.
	DefaultName = "karpenter-leader-election"
	// LegacyName is the Lease Dovetail held before it shared Karpenter's (builds up to commit 4a96df7, 2026-11); a
	// replica of a newer build waits while a replica of an older one renews it.
	LegacyName = "dovetail-leader-election"
	// IdentityPrefix starts every Dovetail holder identity. Karpenter's identities are "<pod name>_<uuid>" and a pod
	// name has no underscore, so no Karpenter identity starts with it, whatever the pods are called.
	IdentityPrefix = "dovetail_"
	// defaultLeaseDuration is used for a Lease without spec.leaseDurationSeconds (controller-runtime's default).
	defaultLeaseDuration = 15 * time.Second
)

// Identity is a Dovetail replica's holder identity: the prefix, the host (pod) name and a unique id.
func Identity(hostname, id string) string { return IdentityPrefix + hostname + "_" + id }

// IsDovetail reports whether a holder identity is a Dovetail replica's (of a release that shares the Lease).
func IsDovetail(holder string) bool { return strings.HasPrefix(holder, IdentityPrefix) }

// HolderKind says what kind of autoscaler holds a Lease.
type HolderKind string

// Holder kinds; the values are the holder_kind label of dovetail_leader_election_waiting.
const (
	KindDovetail      HolderKind = "dovetail"
	KindKarpenter     HolderKind = "karpenter"
	KindOlderDovetail HolderKind = "older-dovetail"
)

// Classify says who holds a Lease named name: a Dovetail replica, a Dovetail release from before the shared
// Lease (anyone holding LegacyName), or else Karpenter.
func Classify(name, holder string) HolderKind {
	switch {
	case IsDovetail(holder):
		return KindDovetail
	case name == LegacyName:
		return KindOlderDovetail
	}
	return KindKarpenter
}

// Hold is a Lease held by a holder that renews it.
type Hold struct {
	Namespace string
	Name      string
	Holder    string
	Kind      HolderKind
	// RenewTime is the holder's last renewal as the Lease records it.
	RenewTime time.Time
	// Renewing says the holder is known to be alive (Tracker.Renewing), not only not yet timed out.
	Renewing bool
}

// Key is "namespace/name".
func (h Hold) Key() string { return h.Namespace + "/" + h.Name }

func (h Hold) String() string {
	return fmt.Sprintf("%s (holder %s, %s)", h.Key(), h.Holder, h.Kind)
}

// Who names the holder's kind for a sentence: "Karpenter", "an older Dovetail release", "Dovetail".
func (k HolderKind) Who() string {
	switch k {
	case KindKarpenter:
		return "Karpenter"
	case KindOlderDovetail:
		return "an older Dovetail release"
	}
	return "Dovetail"
}

// HolderOf returns the Lease's holder identity, empty when it has none (released).
func HolderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Duration is the Lease's duration: how long after a renewal the holder counts as gone.
func Duration(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return defaultLeaseDuration
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

func renewTime(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// HoldOf describes the Lease's holder.
func HoldOf(l *coordinationv1.Lease) Hold {
	h := HolderOf(l)
	return Hold{Namespace: l.Namespace, Name: l.Name, Holder: h, Kind: Classify(l.Name, h), RenewTime: renewTime(l)}
}

// Renewed reports whether the Lease has a holder whose last recorded renewal is younger than the Lease's
// duration at now. It trusts the holder's clock: for a single look (dovetailctl); a controller that watches
// the Lease over time uses a Tracker instead.
func Renewed(l *coordinationv1.Lease, now time.Time) bool {
	if HolderOf(l) == "" {
		return false
	}
	return now.Before(renewTime(l).Add(Duration(l)))
}

// Tracker decides whether watched Leases are held the way client-go's leader election does: a Lease is held
// while its holder is set and its record changed less than its duration ago, as measured on this process's
// clock (so clock skew between holders does not matter). A Lease seen for the first time counts as just
// renewed. Not safe for concurrent use.
type Tracker struct {
	clock clock.PassiveClock
	seen  map[string]observation
}

type observation struct {
	holder string
	renew  time.Time
	at     time.Time
	// renewed is set once the holder renewed while watched (a change after the first sight).
	renewed bool
}

// NewTracker returns a Tracker measuring time with clk.
func NewTracker(clk clock.PassiveClock) *Tracker {
	return &Tracker{clock: clk, seen: map[string]observation{}}
}

// Held records the Lease as seen now and reports whether its holder still holds it.
func (t *Tracker) Held(l *coordinationv1.Lease) bool {
	key := l.Namespace + "/" + l.Name
	holder := HolderOf(l)
	if holder == "" {
		delete(t.seen, key)
		return false
	}
	now := t.clock.Now()
	o, ok := t.seen[key]
	if !ok || o.holder != holder || !o.renew.Equal(renewTime(l)) {
		o = observation{holder: holder, renew: renewTime(l), at: now, renewed: ok && o.holder == holder}
		t.seen[key] = o
	}
	return now.Before(o.at.Add(Duration(l)))
}

// Renewing reports whether the Lease's holder is known to be alive: it renewed while watched, or its recorded
// renewal is younger than its duration on the tracker's clock. A Lease left by a holder that died without
// releasing it counts as held for one duration after it is first seen (Held), but never as renewing.
func (t *Tracker) Renewing(l *coordinationv1.Lease) bool {
	o, ok := t.seen[l.Namespace+"/"+l.Name]
	if !ok || o.holder != HolderOf(l) {
		return false
	}
	return o.renewed || Renewed(l, t.clock.Now())
}

// Keep forgets every Lease whose key ("namespace/name") is not in keys (deleted Leases).
func (t *Tracker) Keep(keys map[string]bool) {
	for k := range t.seen {
		if !keys[k] {
			delete(t.seen, k)
		}
	}
}
