//go:build bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// shortLived is the lifetime below which a node launched during a phase counts as a wasted move: billed for nothing,
// and its pods evicted a second time.
const shortLived = 2 * time.Minute

// churn follows a NodePool's NodeClaims over a disruption phase: which were launched and deleted during it, and how
// long the ones launched during it lived. Feed it every listing the phase makes (observe); the API server's
// creation and deletion timestamps date each claim, the listing time dates one that vanished between listings.
type churn struct {
	start   time.Time
	before  map[string]bool
	created map[string]time.Time
	deleted map[string]time.Time
	// ready holds, for the claims launched during the phase, how long they took from creation to Initialized:
	// what a pod without room waits at least when it needs a new node.
	ready map[string]time.Duration
	// evictions0 and cost0 are the controller's eviction request counter and the NodePool's cost at the start.
	pool       string
	evictions0 float64
	cost0      float64
}

func newChurn(ctx context.Context, pool string, before []karpv1.NodeClaim) (*churn, error) {
	c := &churn{start: time.Now(), before: map[string]bool{}, created: map[string]time.Time{}, deleted: map[string]time.Time{},
		ready: map[string]time.Duration{}, pool: pool}
	for i := range before {
		c.before[before[i].Name] = true
		c.created[before[i].Name] = before[i].CreationTimestamp.Time
	}
	var err error
	c.evictions0, c.cost0, err = c.read(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// read returns the pod evictions the controller requested so far and the pool's cost, from one scrape.
func (c *churn) read(ctx context.Context) (evictions, cost float64, err error) {
	m, err := env.Scrape(ctx)
	if err != nil {
		return 0, 0, err
	}
	if evictions, err = m.Sum("karpenter_pods_eviction_requests_total", nil); err != nil {
		return 0, 0, err
	}
	cost, err = m.Sum("karpenter_nodepools_cost_total", map[string]string{"nodepool": c.pool})
	return evictions, cost, err
}

// observe records a listing of the pool's NodeClaims made at now.
func (c *churn) observe(claims []karpv1.NodeClaim, now time.Time) {
	seen := map[string]bool{}
	for i := range claims {
		name := claims[i].Name
		seen[name] = true
		if _, ok := c.created[name]; !ok {
			c.created[name] = claims[i].CreationTimestamp.Time
		}
		if _, ok := c.ready[name]; !ok && !c.before[name] {
			if cond := claims[i].GetCondition(karpv1.ConditionTypeInitialized); cond != nil && cond.Status == metav1.ConditionTrue {
				c.ready[name] = cond.LastTransitionTime.Sub(claims[i].CreationTimestamp.Time)
			}
		}
		if ts := claims[i].DeletionTimestamp; ts != nil {
			if _, ok := c.deleted[name]; !ok {
				c.deleted[name] = ts.Time
			}
		}
	}
	for name := range c.created {
		if _, ok := c.deleted[name]; !ok && !seen[name] {
			c.deleted[name] = now
		}
	}
}

// figures reports the phase's churn: nodes launched and deleted, launched nodes deleted within shortLived, the
// DisruptionAborted events, the pod evictions the controller requested per node removed and per dollar per hour saved (the pool's cost before
// less after).
func (c *churn) figures(ctx context.Context) (map[string]any, error) {
	launched, deleted, short := 0, 0, 0
	var shortNames []string
	for name, born := range c.created {
		if !c.before[name] {
			launched++
		}
		gone, ok := c.deleted[name]
		if !ok {
			continue
		}
		deleted++
		if !c.before[name] && gone.Sub(born) < shortLived {
			short++
			shortNames = append(shortNames, fmt.Sprintf("%s (%s)", name, gone.Sub(born).Round(time.Second)))
		}
	}
	evictions, cost, err := c.read(ctx)
	if err != nil {
		return nil, err
	}
	sort.Strings(shortNames)
	var events corev1.EventList
	if err := env.Client.List(ctx, &events, client.MatchingFields{"reason": "DisruptionAborted"}); err != nil {
		return nil, err
	}
	aborted := 0
	for i := range events.Items {
		if events.Items[i].LastTimestamp.After(c.start) || events.Items[i].EventTime.After(c.start) {
			aborted += int(max(1, events.Items[i].Count))
		}
	}
	evicted := evictions - c.evictions0
	saved := c.cost0 - cost
	removed := deleted - launched
	out := map[string]any{
		"nodesLaunched":           launched,
		"nodesDeleted":            deleted,
		"nodesLivedUnder2m":       short,
		"disruptionAbortedEvents": aborted,
		"shortLivedNodeClaims":    shortNames,
		"podEvictions":            evicted,
		"dollarsPerHourSaved":     round3(saved),
		"evictionsPerNodeRemove":  0.0,
		"evictionsPerDollarHour":  0.0,
	}
	if len(c.ready) > 0 {
		took := slices.Sorted(maps.Values(c.ready))
		out["replacementSecondsMedian"] = seconds(took[len(took)/2])
		out["replacementSecondsMax"] = seconds(took[len(took)-1])
	}
	if removed > 0 {
		out["evictionsPerNodeRemove"] = round3(evicted / float64(removed))
	}
	if saved > 0 {
		out["evictionsPerDollarHour"] = round3(evicted / saved)
	}
	return out, nil
}
