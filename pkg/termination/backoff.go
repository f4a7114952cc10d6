package termination

import "time"

// Eviction retry backoff: a pod whose eviction was refused (a PodDisruptionBudget answered 429) is retried after
// EvictionBackoffBase, doubling per refusal up to EvictionBackoffMax.
const (
	EvictionBackoffBase = time.Second
	EvictionBackoffMax  = 30 * time.Second
)

// EvictionBackoff returns how long to wait before retrying an eviction refused failures times in a row.
func EvictionBackoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := EvictionBackoffBase
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= EvictionBackoffMax {
			return EvictionBackoffMax
		}
	}
	return d
}
