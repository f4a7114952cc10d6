package awssim

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// CapacityFault makes launches of matching pools fail. Empty or "*" fields match anything.
type CapacityFault struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	// Code is the fleet error code (default InsufficientInstanceCapacity); e.g. MaxSpotInstanceCountExceeded,
	// VcpuLimitExceeded, UnfulfillableCapacity.
	Code string `json:"code,omitempty"`
	// Available is how many more instances matching pools launch before the fault applies (each launch uses one
	// up); 0 means the fault applies at once. It makes a fleet for several instances partly fulfilled.
	Available int `json:"available,omitempty"`
}

func (f CapacityFault) matches(typ, zone, capType string) bool {
	m := func(pattern, v string) bool { return pattern == "" || pattern == "*" || globMatch(pattern, v) }
	return m(f.InstanceType, typ) && m(f.Zone, zone) && m(f.CapacityType, capType)
}

// ThrottleFault answers a fraction of calls with the service's throttling error.
type ThrottleFault struct {
	// Rate is the fraction of calls throttled, 0..1.
	Rate float64 `json:"rate"`
	// Actions limits throttling to these actions (e.g. CreateFleet, DescribeInstances); empty means all.
	Actions []string `json:"actions,omitempty"`
	// Services limits throttling to calls of these service families (ec2, iam, ssm, pricing, sqs, eks, events;
	// STS counts as iam); empty means all. With Actions too, a call must match both.
	Services []string `json:"services,omitempty"`
}

// NoNodeFault keeps matching instances from ever getting a Node: they launch and run, but their kubelet never
// joins the cluster (in real life a broken bootstrap, network or CA). The choice is made once per instance, when
// it starts running; clearing the fault later does not bring a Node to an instance it already held back.
type NoNodeFault struct {
	// NodePool selects instances tagged karpenter.sh/nodepool with this value (a glob); empty matches any.
	NodePool string `json:"nodePool,omitempty"`
	// Tags selects instances carrying every one of these tags; a value of "*" (or a glob) matches any value.
	Tags map[string]string `json:"tags,omitempty"`
	// Count is how many more instances the fault holds back; the fault is removed once it reaches zero. 0 means
	// every matching instance, until the fault is cleared.
	Count int `json:"count,omitempty"`
}

// NodePoolTagKey is the instance tag naming the NodePool of a NodeClaim's instance.
const NodePoolTagKey = "karpenter.sh/nodepool"

// NodeClaimTagKey is the instance tag naming the NodeClaim an instance was launched for.
const NodeClaimTagKey = "karpenter.sh/nodeclaim"

// noteNodeClaimTagLocked records that the instance carries the NodeClaim tag of tags (at launch, or added later:
// a fleet launched for several NodeClaims is tagged per NodeClaim afterwards). Called with s.mu held.
func (s *Simulator) noteNodeClaimTagLocked(id string, tags tagSet) {
	nc, ok := tags[NodeClaimTagKey]
	if !ok {
		return
	}
	if s.nodeClaimInstances == nil {
		s.nodeClaimInstances = map[string]map[string]bool{}
	}
	if s.nodeClaimInstances[nc] == nil {
		s.nodeClaimInstances[nc] = map[string]bool{}
	}
	s.nodeClaimInstances[nc][id] = true
}

func (f NoNodeFault) matches(tags tagSet) bool {
	if f.NodePool != "" && f.NodePool != "*" {
		v, ok := tags[NodePoolTagKey]
		if !ok || !globMatch(f.NodePool, v) {
			return false
		}
	}
	for k, want := range f.Tags {
		v, ok := tags[k]
		if !ok || (want != "*" && !globMatch(want, v)) {
			return false
		}
	}
	return true
}

// Faults is the fault-injection configuration, as the admin API shows it.
type Faults struct {
	Capacity []CapacityFault `json:"capacity"`
	// NoNode are registration faults: matching instances run without ever getting a Node.
	NoNode []NoNodeFault `json:"noNode,omitempty"`
	// RebootHang are reboot faults: the reboots of matching instances never end (their Nodes stay NotReady).
	RebootHang []RebootHangFault `json:"rebootHang,omitempty"`
	Throttle   ThrottleFault     `json:"throttle"`
	// Latency is added to every AWS call.
	Latency Duration `json:"latency"`
	// NotFoundAfterLaunch makes DescribeInstances by instance id answer InvalidInstanceID.NotFound for instances
	// younger than this (EC2's eventual consistency).
	NotFoundAfterLaunch Duration `json:"notFoundAfterLaunch,omitempty"`
	// Setup breaks the account setup `dovetailctl doctor` checks (identity, IAM permissions, queue policy,
	// EventBridge rules).
	Setup SetupFaults `json:"setup,omitempty"`
}

type faults = Faults

// capacityFault returns the error code of the first fault matching the pool, or "" when none matches or the
// first match still has instances available.
func (f *Faults) capacityFault(typ, zone, capType string) string {
	for _, c := range f.Capacity {
		if c.matches(typ, zone, capType) {
			if c.Available > 0 {
				return ""
			}
			if c.Code == "" {
				return "InsufficientInstanceCapacity"
			}
			return c.Code
		}
	}
	return ""
}

// takeCapacity is capacityFault for one launch: a first matching fault with instances available gives one up.
func (f *Faults) takeCapacity(typ, zone, capType string) string {
	for i, c := range f.Capacity {
		if c.matches(typ, zone, capType) {
			if c.Available > 0 {
				f.Capacity[i].Available--
				return ""
			}
			return f.capacityFault(typ, zone, capType)
		}
	}
	return ""
}

// countRefusalLocked records that an injected capacity fault refused the pool in one launch request. Called with
// s.mu held.
func (s *Simulator) countRefusalLocked(typ, zone, capType string) {
	if s.capacityRefusals == nil {
		s.capacityRefusals = map[string]int{}
	}
	s.capacityRefusals[typ+"/"+zone+"/"+capType]++
}

// withholdNodeLocked reports whether a NoNode fault holds back the Node of an instance that just started
// running, and uses up one of the fault's count. Called with s.mu held.
func (s *Simulator) withholdNodeLocked(tags tagSet) bool {
	for n, f := range s.faults.NoNode {
		if !f.matches(tags) {
			continue
		}
		if f.Count > 0 {
			if f.Count == 1 {
				s.faults.NoNode = append(s.faults.NoNode[:n:n], s.faults.NoNode[n+1:]...)
			} else {
				s.faults.NoNode[n].Count--
			}
		}
		return true
	}
	return false
}

// throttleCodes are the throttling errors each protocol family answers with.
var throttleCodes = map[string]*apiError{
	"ec2":     {Status: http.StatusServiceUnavailable, Code: "RequestLimitExceeded", Message: "Request limit exceeded."},
	"iam":     {Status: http.StatusBadRequest, Code: "Throttling", Message: "Rate exceeded", Sender: true},
	"ssm":     {Status: http.StatusBadRequest, Code: "ThrottlingException", Message: "Rate exceeded"},
	"pricing": {Status: http.StatusBadRequest, Code: "ThrottlingException", Message: "Rate exceeded"},
	"sqs": {Status: http.StatusBadRequest, Code: "com.amazonaws.sqs#RequestThrottled", Message: "Rate exceeded",
		QueryCode: "RequestThrottled"},
	"eks":    {Status: http.StatusTooManyRequests, Code: "ThrottlingException", Message: "Rate exceeded"},
	"events": {Status: http.StatusBadRequest, Code: "ThrottlingException", Message: "Rate exceeded"},
}

// applyFaults adds latency and decides whether the call is throttled.
func (s *Simulator) applyFaults(r *http.Request, service, action string) *apiError {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[string]int{}
	}
	s.calls[action]++
	if s.serviceCalls == nil {
		s.serviceCalls = map[string]int{}
	}
	s.serviceCalls[service]++
	latency := time.Duration(s.faults.Latency)
	th := s.faults.Throttle
	throttle := false
	if th.Rate > 0 && (len(th.Actions) == 0 || contains(th.Actions, action)) && (len(th.Services) == 0 || contains(th.Services, service)) {
		throttle = s.rng.Float64() < th.Rate
	}
	s.mu.Unlock()
	if latency > 0 {
		sleep(r.Context(), s, latency)
	}
	if throttle {
		s.log.Info("throttling call", "service", service, "action", action)
		e := *throttleCodes[service]
		return &e
	}
	return nil
}

func sleep(ctx context.Context, s *Simulator, d time.Duration) {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// SetFaults replaces the fault configuration.
func (s *Simulator) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// GetFaults returns the current fault configuration.
func (s *Simulator) GetFaults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	f.Capacity = append([]CapacityFault{}, f.Capacity...)
	f.Setup.DeniedActions = append([]string(nil), f.Setup.DeniedActions...)
	f.Setup.MissingEventRules = append([]string(nil), f.Setup.MissingEventRules...)
	f.NoNode = nil
	for _, nf := range s.faults.NoNode {
		nf.Tags = copyMap(nf.Tags)
		f.NoNode = append(f.NoNode, nf)
	}
	f.RebootHang = nil
	for _, rf := range s.faults.RebootHang {
		rf.Tags = copyMap(rf.Tags)
		f.RebootHang = append(f.RebootHang, rf)
	}
	return f
}

// AddNoNodeFault adds a registration fault: matching instances will run without ever getting a Node.
func (s *Simulator) AddNoNodeFault(f NoNodeFault) error {
	if err := validateNoNodeFault(f); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Tags = copyMap(f.Tags)
	s.faults.NoNode = append(s.faults.NoNode, f)
	return nil
}

// ClearNoNodeFaults removes every registration fault; instances already held back stay without a Node.
func (s *Simulator) ClearNoNodeFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.NoNode = nil
}

func validateNoNodeFault(f NoNodeFault) error {
	if f.Count < 0 {
		return fmt.Errorf("noNode fault count %d must not be negative", f.Count)
	}
	for k := range f.Tags {
		if k == "" {
			return fmt.Errorf("noNode fault tags: empty tag key")
		}
	}
	return nil
}

// AddCapacityFault adds an insufficient-capacity fault.
func (s *Simulator) AddCapacityFault(f CapacityFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.Capacity = append(s.faults.Capacity, f)
}

// ClearFaults removes every fault.
func (s *Simulator) ClearFaults() { s.SetFaults(Faults{}) }

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("200ms").
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads "200ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v, err := time.ParseDuration(string(b[1 : len(b)-1]))
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return &time.ParseError{Layout: "duration", Value: string(b)}
		}
		n = n*10 + int64(c-'0')
	}
	*d = Duration(n)
	return nil
}
