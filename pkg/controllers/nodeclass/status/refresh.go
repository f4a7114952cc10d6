package status

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/settings"
)

// The parts of an EC2NodeClass's status that are resolved again on their own schedules.
const (
	partSubnets        = "subnets"
	partSecurityGroups = "securityGroups"
	partAMIs           = "amis"
	// partOther is the instance profile and the capacity reservations, resolved again every resyncPeriod.
	partOther = "other"
)

// partConditions returns the conditions each part sets.
func partConditions() map[string][]string {
	return map[string][]string{
		partSubnets:        {awsv1.ConditionTypeSubnetsReady},
		partSecurityGroups: {awsv1.ConditionTypeSecurityGroupsReady},
		partAMIs:           {awsv1.ConditionTypeAMIsReady},
		partOther:          {awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeCapacityReservationsReady},
	}
}

// defaultRefreshInterval is Karpenter's default AMI, subnet and security group refresh interval, used when the
// settings leave one unset (tests that build Settings by hand).
const defaultRefreshInterval = time.Minute

// refreshIntervals are how often each part is resolved again: AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL and
// SECURITY_GROUP_REFRESH_INTERVAL, and resyncPeriod for the rest.
func refreshIntervals(s *settings.Settings) map[string]time.Duration {
	or := func(d time.Duration) time.Duration {
		if d <= 0 {
			return defaultRefreshInterval
		}
		return d
	}
	m := map[string]time.Duration{partSubnets: defaultRefreshInterval, partSecurityGroups: defaultRefreshInterval,
		partAMIs: defaultRefreshInterval, partOther: resyncPeriod}
	if s != nil {
		m[partSubnets] = or(s.SubnetRefreshInterval)
		m[partSecurityGroups] = or(s.SecurityGroupRefreshInterval)
		m[partAMIs] = or(s.AMIRefreshInterval)
	}
	return m
}

// refreshes remembers, for each EC2NodeClass, when each part was last resolved without error, for the class's
// current generation. A new generation (a spec change), a new class under the same name, and a restart resolve
// every part at once. Safe for concurrent use.
type refreshes struct {
	mu      sync.Mutex
	classes map[string]refreshed
}

type refreshed struct {
	uid        types.UID
	generation int64
	at         map[string]time.Time
}

// due reports which parts of nc are due at now.
func (r *refreshes) due(nc *awsv1.EC2NodeClass, now time.Time, intervals map[string]time.Duration) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.classes[nc.Name]
	out := map[string]bool{}
	for part, every := range intervals {
		last, seen := e.at[part]
		out[part] = !ok || e.uid != nc.UID || e.generation != nc.Generation || !seen || now.Sub(last) >= every
	}
	return out
}

// record notes the parts resolved without error at now.
func (r *refreshes) record(nc *awsv1.EC2NodeClass, now time.Time, parts []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.classes == nil {
		r.classes = map[string]refreshed{}
	}
	e, ok := r.classes[nc.Name]
	if !ok || e.uid != nc.UID || e.generation != nc.Generation {
		e = refreshed{uid: nc.UID, generation: nc.Generation, at: map[string]time.Time{}}
	}
	for _, p := range parts {
		e.at[p] = now
	}
	r.classes[nc.Name] = e
}

// next is how long until the first part of nc is due again (at least a second).
func (r *refreshes) next(nc *awsv1.EC2NodeClass, now time.Time, intervals map[string]time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := resyncPeriod
	e := r.classes[nc.Name]
	for part, every := range intervals {
		last, seen := e.at[part]
		if !seen {
			return time.Second
		}
		wait = min(wait, every-now.Sub(last))
	}
	return max(wait, time.Second)
}

// forget drops a class that is gone.
func (r *refreshes) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.classes, name)
}
