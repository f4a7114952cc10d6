package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// decisionTimes keeps, by pod UID, when each pending pod was first seen (by the pod trigger) until a pass first
// decided on it, for karpenter_pods_scheduling_decision_duration_seconds. The trigger writes it while a pass may
// run.
type decisionTimes struct {
	mu sync.Mutex
	// seen is when each pending pod was first seen, for pods no pass decided on yet.
	seen map[types.UID]time.Time
	// decided are the pods a pass decided on that are still pending (a pod is observed once).
	decided map[types.UID]bool
}

func newDecisionTimes() *decisionTimes {
	return &decisionTimes{seen: map[types.UID]time.Time{}, decided: map[types.UID]bool{}}
}

// ack records that the pending pod was seen at now, unless it was seen or decided on before.
func (d *decisionTimes) ack(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[uid]; ok || d.decided[uid] {
		return
	}
	d.seen[uid] = now
}

// decide is called after a pass that started at passStart decided on pods (every pending pod of the pass): it
// returns, for each of them seen and not decided on before, the time from when it was seen until now, and marks
// them decided. Entries of pods no longer pending go, except pods seen after the pass started (the pass did not
// know them yet).
func (d *decisionTimes) decide(pods []*corev1.Pod, passStart, now time.Time) []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []time.Duration
	pending := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		pending[p.UID] = true
		if d.decided[p.UID] {
			continue
		}
		if seen, ok := d.seen[p.UID]; ok {
			out = append(out, max(now.Sub(seen), 0))
			delete(d.seen, p.UID)
		}
		d.decided[p.UID] = true
	}
	for uid := range d.decided {
		if !pending[uid] {
			delete(d.decided, uid)
		}
	}
	for uid, seen := range d.seen {
		if !pending[uid] && seen.Before(passStart) {
			delete(d.seen, uid)
		}
	}
	return out
}
