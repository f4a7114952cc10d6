package capacityreservation

import "sync"

// Tracker counts the instances each reservation can still take. DescribeCapacityReservations sets the counts;
// a launch claims one before CreateFleet and gives it back if the launch fails, so concurrent launches never
// send more instances to a reservation than it has room for.
type Tracker struct {
	mu     sync.Mutex
	counts map[string]int
	// claimed are launches in flight: a refresh from EC2 may not count them yet.
	claimed map[string]int
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{counts: map[string]int{}, claimed: map[string]int{}} }

// Observe records the available count EC2 reported for a reservation, minus launches still in flight.
func (t *Tracker) Observe(id string, available int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counts[id] = max(0, available-t.claimed[id])
}

// Known reports whether EC2's count for the reservation has been observed.
func (t *Tracker) Known(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.counts[id]
	return ok
}

// Available is the number of instances the reservation can still take (zero if unknown).
func (t *Tracker) Available(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[id]
}

// Claim takes one instance of room in the reservation; false when it has none.
func (t *Tracker) Claim(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts[id] <= 0 {
		return false
	}
	t.counts[id]--
	t.claimed[id]++
	return true
}

// Launched ends a claim whose instance launched: EC2's next count includes it.
func (t *Tracker) Launched(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claimed[id] > 0 {
		t.claimed[id]--
	}
}

// Release gives back a claim whose launch failed for another reason than the reservation being full.
func (t *Tracker) Release(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claimed[id] > 0 {
		t.claimed[id]--
		t.counts[id]++
	}
}

// Unavailable leaves a known reservation no room (EC2 is reclaiming it) until Observe says otherwise.
func (t *Tracker) Unavailable(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.counts[id]; ok {
		t.counts[id] = 0
	}
}

// Exhausted ends a claim whose launch EC2 refused because the reservation is full: it has no room until
// EC2 says otherwise.
func (t *Tracker) Exhausted(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claimed[id] > 0 {
		t.claimed[id]--
	}
	t.counts[id] = 0
}
