package awssim

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// nodeAction is a NodeSink call decided under the lock and run after it.
type nodeAction struct {
	acct *account
	inst *instance
	sink NodeSink
	kind string // create, untaint, delete, reboot-begin, reboot-end
	spec NodeSpec
	name string
	// taintDelay (create) is drawn under the lock, in instance order, so a seed gives the same delays however
	// the calls interleave; negative means the taint is never removed.
	taintDelay time.Duration
}

// nodeCallConcurrency bounds the NodeSink calls a Step runs at once.
const nodeCallConcurrency = 16

// Step advances every instance's lifecycle to the clock's current time and performs the resulting Node calls.
// Run calls it on a ticker; tests call it after moving a fake clock. The calls (at most one per instance) run
// side by side: each waits on the API server, and one after the other a 200-instance scale-out or teardown took
// minutes on a loaded machine.
func (s *Simulator) Step(ctx context.Context) {
	actions := s.advanceLocked()
	sem := make(chan struct{}, nodeCallConcurrency)
	var wg sync.WaitGroup
	for _, a := range actions {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.perform(ctx, a)
		}()
	}
	wg.Wait()
}

func (s *Simulator) advanceLocked() []nodeAction {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	tm := s.opts.Timing
	var out []nodeAction
	for _, key := range sortedKeys(s.accounts) {
		a := s.accounts[key]
		s.expireReservationsLocked(a, now)
		for _, i := range a.sortedInstances() {
			if !i.terminateAt.IsZero() && !now.Before(i.terminateAt) {
				i.terminateAt = time.Time{}
				s.beginTerminationLocked(i, "Server.SpotInstanceTermination: Spot instance termination")
			}
			switch i.State {
			case StatePending:
				if now.Sub(i.StateSince) >= tm.Pending {
					i.State, i.StateSince = StateRunning, now
					s.log.Info("instance running", "instance-id", i.ID, "node", i.PrivateDNS)
				}
			case StateShuttingDown:
				if now.Sub(i.StateSince) >= tm.ShuttingDown {
					i.State, i.StateSince = StateTerminated, now
					if sn := a.subnetByID(i.SubnetID); sn != nil {
						sn.release(i.PrivateIP)
					}
					if cr := a.reservationByID(i.CapacityReservationID); cr != nil && cr.State == "active" &&
						(cr.ReservationType != "capacity-block" || now.Before(cr.End.Add(-capacityBlockReclaimLead))) {
						cr.Available++
					}
					s.log.Info("instance terminated", "instance-id", i.ID)
				}
			case StateTerminated:
				if now.Sub(i.StateSince) >= tm.TerminatedRetention && (i.node.deleted || !i.node.created) {
					delete(a.instances, i.ID)
					continue
				}
			}
			if s.opts.Nodes == nil {
				continue
			}
			if i.State == StateRunning && !i.node.checked {
				i.node.checked = true
				if i.node.withheld = s.withholdNodeLocked(i.Tags); i.node.withheld {
					s.log.Info("fault: the instance runs but never gets a Node", "instance-id", i.ID, "node", i.PrivateDNS)
				}
			}
			switch {
			case i.node.withheld:
			case i.State == StateRunning && !i.node.created:
				spec, ok := s.nodeSpecLocked(i)
				if ok {
					delay := time.Duration(-1)
					if tm.UninitializedTaintDelayMin >= 0 {
						delay = s.taintDelayLocked()
					}
					out = append(out, nodeAction{acct: a, inst: i, sink: i.node.sink, kind: "create", spec: spec, taintDelay: delay})
				}
			case i.State == StateRunning && i.node.created && !i.node.taintRemoved && !i.node.taintAt.IsZero() && !now.Before(i.node.taintAt):
				out = append(out, nodeAction{acct: a, inst: i, sink: i.node.sink, kind: "untaint", name: i.PrivateDNS})
			case i.State == StateRunning && i.node.created && i.node.reboot.pending:
				out = append(out, nodeAction{acct: a, inst: i, sink: i.node.sink, kind: "reboot-begin", name: i.PrivateDNS})
			case i.State == StateRunning && i.node.created && i.node.reboot.active && !i.node.reboot.hang && !now.Before(i.node.reboot.until):
				out = append(out, nodeAction{acct: a, inst: i, sink: i.node.sink, kind: "reboot-end", name: i.PrivateDNS,
					spec: NodeSpec{BootID: bootID(i.ID, i.reboots)}})
			case i.State == StateTerminated && i.node.created && !i.node.deleted:
				out = append(out, nodeAction{acct: a, inst: i, sink: i.node.sink, kind: "delete", name: i.PrivateDNS})
			}
		}
	}
	return out
}

// nodeSpecLocked builds (once) the Node spec of an instance. Bad user data is logged and yields a Node
// without user-data labels and taints.
func (s *Simulator) nodeSpecLocked(i *instance) (NodeSpec, bool) {
	if i.node.spec != nil {
		return *i.node.spec, true
	}
	t, ok := s.cat.Type(i.Type)
	if !ok {
		s.log.Error("instance type missing from catalog; no Node created", "instance-id", i.ID, "type", i.Type)
		return NodeSpec{}, false
	}
	b, err := ParseUserData(i.UserData)
	if err != nil {
		i.node.userDataError = err.Error()
		s.log.Error("cannot parse user data; the Node gets no labels or taints from it", "instance-id", i.ID, "error", err)
		b = Bootstrap{}
	}
	sink, cluster, ok := s.routeLocked(b.APIServerEndpoint)
	if !ok {
		i.node.withheld = true
		s.log.Error("user data names an API server the simulator serves no cluster for; the instance runs without a Node",
			"instance-id", i.ID, "endpoint", b.APIServerEndpoint)
		return NodeSpec{}, false
	}
	i.node.sink, i.node.cluster = sink, cluster
	i.node.clusterDNS = b.ClusterDNS
	if s.ipv6() {
		if problem := ipv6NodeProblem(i, b); problem != "" {
			i.node.withheld, i.node.joinError = true, problem
			s.log.Error("the instance cannot join the IPv6 cluster; it runs without a Node", "instance-id", i.ID, "reason", problem)
			return NodeSpec{}, false
		}
	}
	spec, err := s.buildNodeSpec(i, t, b)
	if err != nil {
		i.node.userDataError = err.Error()
		s.log.Error("bad kubelet settings in user data; using defaults", "instance-id", i.ID, "error", err)
		spec, err = s.buildNodeSpec(i, t, Bootstrap{})
		if err != nil {
			s.log.Error("cannot build Node", "instance-id", i.ID, "error", err)
			return NodeSpec{}, false
		}
	}
	i.node.spec = &spec
	return spec, true
}

func (s *Simulator) perform(ctx context.Context, a nodeAction) {
	sink := a.sink
	if sink == nil {
		sink = s.opts.Nodes
	}
	var err error
	switch a.kind {
	case "create":
		err = sink.CreateNode(ctx, a.spec)
	case "untaint":
		err = sink.RemoveTaint(ctx, a.name, UninitializedTaintKey)
	case "delete":
		err = sink.DeleteNode(ctx, a.name)
	case "reboot-begin", "reboot-end":
		r, ok := sink.(NodeRebooter)
		if !ok {
			s.log.Warn("the node sink cannot show reboots; the Node stays as it is", "node", a.name, "instance-id", a.inst.ID)
			break
		}
		if a.kind == "reboot-begin" {
			err = r.BeginReboot(ctx, a.name)
		} else {
			err = r.EndReboot(ctx, a.name, a.spec.BootID)
		}
	}
	if err != nil {
		s.log.Error("node call failed; will retry", "call", a.kind, "node", a.spec.Name+a.name, "instance-id", a.inst.ID, "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch a.kind {
	case "create":
		a.inst.node.created = true
		s.log.Info("node created", "node", a.spec.Name, "instance-id", a.inst.ID, "cluster", a.inst.node.cluster)
		if a.taintDelay >= 0 {
			a.inst.node.taintAt = s.clock.Now().Add(a.taintDelay)
		}
	case "untaint":
		a.inst.node.taintRemoved = true
		s.log.Info("node initialized", "node", a.name, "instance-id", a.inst.ID)
	case "delete":
		a.inst.node.deleted = true
		s.log.Info("node deleted", "node", a.name, "instance-id", a.inst.ID)
	case "reboot-begin":
		a.inst.node.reboot.pending, a.inst.node.reboot.active = false, true
		s.log.Info("node rebooting", "node", a.name, "instance-id", a.inst.ID)
	case "reboot-end":
		a.inst.node.reboot.active = false
		if a.inst.node.spec != nil {
			a.inst.node.spec.BootID = a.spec.BootID
		}
		s.log.Info("node back from reboot", "node", a.name, "instance-id", a.inst.ID, "boot-id", a.spec.BootID)
	}
}

func (s *Simulator) taintDelayLocked() time.Duration {
	lo, hi := s.opts.Timing.UninitializedTaintDelayMin, s.opts.Timing.UninitializedTaintDelayMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int63n(int64(hi-lo)+1))
}

// expireReservationsLocked ends reservations past their end date, as EC2 does: a Capacity Block takes no new
// launches and terminates its instances from capacityBlockReclaimLead before its end; at the end a reservation
// expires, and the instances of an expired default reservation go on as plain on-demand instances.
func (s *Simulator) expireReservationsLocked(a *account, now time.Time) {
	for _, cr := range a.reservations {
		if cr.End.IsZero() || cr.State != "active" {
			continue
		}
		block := cr.ReservationType == "capacity-block"
		if block && !now.Before(cr.End.Add(-capacityBlockReclaimLead)) {
			cr.Available = 0
			for _, i := range a.sortedInstances() {
				if i.CapacityReservationID == cr.ID && s.beginTerminationLocked(i, "Server.ScheduledStop: Capacity Block reservation ending") {
					s.log.Info("capacity block reclaiming instance", "capacity-reservation-id", cr.ID, "instance-id", i.ID)
				}
			}
		}
		if now.Before(cr.End) {
			continue
		}
		cr.State, cr.Available = "expired", 0
		s.log.Info("capacity reservation expired", "capacity-reservation-id", cr.ID)
		if !block {
			a.releaseReservationInstancesLocked(cr.ID)
		}
	}
}

// routeLocked picks the cluster an instance's Node joins from the API server endpoint its user data names:
// ClusterNodes[endpoint] when listed, else the default cluster (Nodes) when the endpoint is empty or
// ClusterEndpoint, or whenever no further clusters are configured. ok is false when further clusters are
// configured and the endpoint names none of them.
func (s *Simulator) routeLocked(endpoint string) (sink NodeSink, cluster string, ok bool) {
	if len(s.opts.ClusterNodes) == 0 || endpoint == "" {
		return s.opts.Nodes, "", true
	}
	key, err := endpointKey(endpoint)
	if err != nil {
		return nil, "", false
	}
	if primary, _ := endpointKey(s.opts.ClusterEndpoint); key == primary {
		return s.opts.Nodes, "", true
	}
	if sink, found := s.opts.ClusterNodes[key]; found {
		return sink, key, true
	}
	return nil, "", false
}

// endpointKey normalises an API server URL for comparison: lower-case scheme and host, no trailing slash.
func endpointKey(endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("API server endpoint %q is not a URL with a host", endpoint)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/"), nil
}
