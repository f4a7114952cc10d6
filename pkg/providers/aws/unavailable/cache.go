package unavailable

import (
	"context"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultTTL is how long a refused offering stays unavailable.
const DefaultTTL = 3 * time.Minute

// Cache holds unavailable offerings and subnets until their entries expire. It is safe for concurrent use.
type Cache struct {
	clock clock.Clock
	ttl   time.Duration

	mu       sync.Mutex
	until    map[Offering]time.Time
	reasons  map[Offering]string
	subnets  map[string]time.Time
	sequence uint64
}

// Offering names one (instance type, zone, capacity type) triple.
type Offering struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// New returns an empty cache whose entries live for ttl (DefaultTTL when ttl is zero).
func New(clk clock.Clock, ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Cache{clock: clk, ttl: ttl, until: map[Offering]time.Time{}, reasons: map[Offering]string{}, subnets: map[string]time.Time{}}
}

// MarkUnavailable makes the offering unavailable for the cache's TTL, counting from now.
func (c *Cache) MarkUnavailable(ctx context.Context, reason string, o Offering) {
	log.FromContext(ctx).V(1).Info("marking offering unavailable", "instance-type", o.InstanceType,
		"zone", o.Zone, "capacity-type", o.CapacityType, "reason", reason, "ttl", c.ttl.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.until[o] = c.clock.Now().Add(c.ttl)
	c.reasons[o] = reason
	c.sequence++
}

// Entry is one unavailable offering: why, and until when.
type Entry struct {
	Offering
	Reason string
	Until  time.Time
}

// Entries returns the offerings that are unavailable now, sorted by instance type, zone and capacity type.
func (c *Cache) Entries() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	out := make([]Entry, 0, len(c.until))
	for o, t := range c.until {
		if now.Before(t) {
			out = append(out, Entry{Offering: o, Reason: c.reasons[o], Until: t})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Offering, out[j].Offering
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
	return out
}

// IsUnavailable reports whether the offering was marked and its entry has not expired.
func (c *Cache) IsUnavailable(o Offering) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.until[o]
	if !ok {
		return false
	}
	if !c.clock.Now().Before(t) {
		delete(c.until, o)
		delete(c.reasons, o)
		c.sequence++
		return false
	}
	return true
}

// MarkSubnetUnavailable makes a subnet unavailable for launches (no free addresses) for the cache's TTL.
func (c *Cache) MarkSubnetUnavailable(ctx context.Context, subnetID string) {
	log.FromContext(ctx).V(1).Info("marking subnet unavailable", "subnet", subnetID, "ttl", c.ttl.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subnets[subnetID] = c.clock.Now().Add(c.ttl)
	c.sequence++
}

// IsSubnetUnavailable reports whether the subnet was marked and its entry has not expired.
func (c *Cache) IsSubnetUnavailable(subnetID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.subnets[subnetID]
	if !ok {
		return false
	}
	if !c.clock.Now().Before(t) {
		delete(c.subnets, subnetID)
		c.sequence++
		return false
	}
	return true
}

// Sequence changes whenever an entry is added or found expired; callers use it to invalidate derived caches.
// Expiry is only noticed on lookup, so callers that cache must also bound their own lifetime.
func (c *Cache) Sequence() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sequence
}
