package termination

import (
	"fmt"
	"time"
)

// Deadline returns when the terminationGracePeriod of a NodeClaim whose deletion was requested at deletedAt
// ends, or nil when the NodeClaim has no terminationGracePeriod (the drain may then wait forever).
func Deadline(deletedAt time.Time, terminationGracePeriod *time.Duration) *time.Time {
	if terminationGracePeriod == nil {
		return nil
	}
	d := deletedAt.Add(*terminationGracePeriod).UTC()
	return &d
}

// FormatDeadline renders a deadline as the value of karpenter.sh/nodeclaim-termination-timestamp (RFC 3339, UTC).
func FormatDeadline(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseDeadline reads the value of karpenter.sh/nodeclaim-termination-timestamp.
func ParseDeadline(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("termination timestamp %q is not an RFC 3339 time: %w", s, err)
	}
	return t, nil
}

// Expired reports whether the deadline is set and now is at or past it.
func Expired(deadline *time.Time, now time.Time) bool {
	return deadline != nil && !now.Before(*deadline)
}

// ForcedDeletionAt returns when a pod with the given grace period must be deleted so that it still gets its
// whole grace period before the deadline: deadline minus grace.
func ForcedDeletionAt(deadline time.Time, podGrace time.Duration) time.Time {
	return deadline.Add(-podGrace)
}

// ForcedGracePeriodSeconds returns the grace period, in whole seconds, a pod deleted at now gets so that it is
// gone by the deadline: the time left, rounded down, never more than the pod's own grace period and never
// negative. Zero (past the deadline) means the pod object is removed at once.
func ForcedGracePeriodSeconds(deadline, now time.Time, podGrace time.Duration) int64 {
	left := deadline.Sub(now)
	if left > podGrace {
		left = podGrace
	}
	if left < 0 {
		return 0
	}
	return int64(left / time.Second)
}
