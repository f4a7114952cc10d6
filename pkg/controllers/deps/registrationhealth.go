package deps

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// RegistrationWindow is how many of a NodePool's last registration outcomes decide its NodeRegistrationHealthy
// condition, and RegistrationFailureShare the share of failures among them that makes it False (Karpenter's
// rules: two failures among the last four launches).
const (
	RegistrationWindow       = 4
	RegistrationFailureShare = 0.5
)

// RegistrationStatus is what a NodePool's recent registrations say.
type RegistrationStatus int

// Registration statuses.
const (
	RegistrationUnknown RegistrationStatus = iota
	RegistrationHealthy
	RegistrationUnhealthy
)

// RegistrationHealth keeps, per NodePool (by UID), whether each of the last RegistrationWindow NodeClaims
// launched from it registered a Node. The NodeClaim lifecycle records outcomes; the NodePool readiness controller
// forgets them when the NodePool or its node class changes. Safe for concurrent use.
type RegistrationHealth struct {
	mu       sync.Mutex
	outcomes map[types.UID][]bool
}

// NewRegistrationHealth returns an empty record.
func NewRegistrationHealth() *RegistrationHealth {
	return &RegistrationHealth{outcomes: map[types.UID][]bool{}}
}

func statusOf(outcomes []bool) RegistrationStatus {
	if len(outcomes) == 0 {
		return RegistrationUnknown
	}
	failed := 0
	for _, ok := range outcomes {
		if !ok {
			failed++
		}
	}
	if float64(failed)/RegistrationWindow >= RegistrationFailureShare {
		return RegistrationUnhealthy
	}
	return RegistrationHealthy
}

// Status returns what the NodePool's recorded outcomes say.
func (r *RegistrationHealth) Status(pool types.UID) RegistrationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return statusOf(r.outcomes[pool])
}

// Record adds an outcome (registered or not) for the NodePool and returns the status after it.
func (r *RegistrationHealth) Record(pool types.UID, registered bool) RegistrationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := append(r.outcomes[pool], registered)
	if len(o) > RegistrationWindow {
		o = o[len(o)-RegistrationWindow:]
	}
	r.outcomes[pool] = o
	return statusOf(o)
}

// Set replaces the NodePool's outcomes by the fewest that give the status (none for Unknown): after a restart
// the condition on the NodePool is the only record left.
func (r *RegistrationHealth) Set(pool types.UID, s RegistrationStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch s {
	case RegistrationHealthy:
		r.outcomes[pool] = []bool{true}
	case RegistrationUnhealthy:
		n := int(RegistrationWindow * RegistrationFailureShare)
		r.outcomes[pool] = make([]bool, n)
	default:
		delete(r.outcomes, pool)
	}
}
