package disruption

import (
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Defaults the CRDs apply to fields left out of a manifest. The API server always fills them in; the
// controller applies the same values to objects that skipped defaulting (e.g. built in memory) rather than
// guessing differently.
const (
	defaultConsolidateAfter = 0 * time.Second
	defaultExpireAfter      = 720 * time.Hour
)

// effective returns d's duration, def when d was never set, and ok=false when d is "Never".
func effective(d karpv1.NillableDuration, def time.Duration) (time.Duration, bool) {
	if d.IsZero() {
		return def, true
	}
	if d.IsNever() {
		return 0, false
	}
	return *d.Duration, true
}

// consolidation says whether a NodeClaim is consolidatable at now.
type consolidation struct {
	// Enabled is false when the NodePool's consolidateAfter is Never or the NodeClaim is not initialized:
	// the Consolidatable condition must not be present.
	Enabled bool
	// Since is when the node last changed: the later of its last pod event and its initialization.
	Since time.Time
	// After is the NodePool's consolidateAfter.
	After time.Duration
	// Wait is how long until the node becomes consolidatable; zero or less means it is.
	Wait time.Duration
}

// Consolidatable reports whether consolidateAfter has passed.
func (c consolidation) Consolidatable() bool { return c.Enabled && c.Wait <= 0 }

// consolidationAt evaluates consolidateAfter for nc at now.
func consolidationAt(nc *karpv1.NodeClaim, np *karpv1.NodePool, now time.Time) consolidation {
	after, ok := effective(np.Spec.Disruption.ConsolidateAfter, defaultConsolidateAfter)
	initialized := nc.GetCondition(karpv1.ConditionTypeInitialized)
	if !ok || initialized == nil || initialized.Status != "True" {
		return consolidation{}
	}
	since := initialized.LastTransitionTime.Time
	if last := nc.Status.LastPodEventTime.Time; last.After(since) {
		since = last
	}
	return consolidation{Enabled: true, Since: since, After: after, Wait: since.Add(after).Sub(now)}
}

// expiration says whether a NodeClaim has outlived its expireAfter at now.
type expiration struct {
	// Enabled is false when the NodeClaim's expireAfter is Never.
	Enabled bool
	// Age is how long ago the NodeClaim was created.
	Age time.Duration
	// After is the NodeClaim's expireAfter.
	After time.Duration
	// Wait is how long until the NodeClaim expires; zero or less means it has.
	Wait time.Duration
}

// Expired reports whether expireAfter has passed.
func (e expiration) Expired() bool { return e.Enabled && e.Wait <= 0 }

// expirationAt evaluates the NodeClaim's own spec.expireAfter (copied from its NodePool at launch) at now.
func expirationAt(nc *karpv1.NodeClaim, now time.Time) expiration {
	after, ok := effective(nc.Spec.ExpireAfter, defaultExpireAfter)
	if !ok {
		return expiration{}
	}
	age := now.Sub(nc.CreationTimestamp.Time)
	return expiration{Enabled: true, Age: age, After: after, Wait: after - age}
}
