package instancetype

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/clock"
)

// LearnedMemoryTTL is how long a memory capacity learned from a node is used without a node confirming it again
// (60 days, as Karpenter keeps its discovered capacity).
const LearnedMemoryTTL = 60 * 24 * time.Hour

// LearnedMemory holds the memory capacity registered nodes report, per instance type and AMI set: what the
// kubelet sees once the hypervisor, firmware and kernel have taken their share, which VM_MEMORY_OVERHEAD_PERCENT
// only estimates. The smallest value seen is kept, so one node reporting less lowers it for the next launches.
type LearnedMemory struct {
	clock clock.Clock
	ttl   time.Duration

	mu      sync.Mutex
	entries map[learnedKey]learnedEntry
}

type learnedKey struct{ instanceType, amis string }

type learnedEntry struct {
	memory  resource.Quantity
	expires time.Time
}

// NewLearnedMemory returns an empty store whose entries last ttl (zero: LearnedMemoryTTL).
func NewLearnedMemory(clk clock.Clock, ttl time.Duration) *LearnedMemory {
	if ttl <= 0 {
		ttl = LearnedMemoryTTL
	}
	return &LearnedMemory{clock: clk, ttl: ttl, entries: map[learnedKey]learnedEntry{}}
}

// Observe records that a node of instanceType launched from the AMI set amis (AMIKey) reports memory. It keeps
// the value when there is none yet, or it is below or equal to the one held (equal renews its TTL), and reports
// whether the value held changed.
func (l *LearnedMemory) Observe(instanceType, amis string, memory resource.Quantity) bool {
	if instanceType == "" || memory.Sign() <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := learnedKey{instanceType, amis}
	now := l.clock.Now()
	held, ok := l.entries[k]
	if ok && now.After(held.expires) {
		ok = false
	}
	if ok && memory.Cmp(held.memory) > 0 {
		return false
	}
	l.entries[k] = learnedEntry{memory: memory.DeepCopy(), expires: now.Add(l.ttl)}
	return !ok || memory.Cmp(held.memory) < 0
}

// Get returns the memory learned for instanceType with the AMI set amis, if one was observed within the TTL.
func (l *LearnedMemory) Get(instanceType, amis string) (resource.Quantity, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := learnedKey{instanceType, amis}
	e, ok := l.entries[k]
	if !ok {
		return resource.Quantity{}, false
	}
	if l.clock.Now().After(e.expires) {
		delete(l.entries, k)
		return resource.Quantity{}, false
	}
	return e.memory.DeepCopy(), true
}
