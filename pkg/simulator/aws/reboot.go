package awssim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// RebootingAnnotation marks a Node whose instance is rebooting: kwok's ready stage (hack/kwok/stages.yaml) leaves
// such a Node NotReady until the simulator removes it.
const RebootingAnnotation = "awssim.dovetail.dev/rebooting"

// NodeRebooter is implemented by NodeSinks that can show a reboot on the Node (the kube sink): BeginReboot makes
// the Node NotReady, EndReboot brings it back Ready with a new boot ID and its node monitoring agent conditions
// cleared (a GPU fault a reboot clears no longer reported).
type NodeRebooter interface {
	BeginReboot(ctx context.Context, name string) error
	EndReboot(ctx context.Context, name, bootID string) error
}

// RebootHangFault makes the reboots of matching instances never end: the Node stays NotReady (in real life a
// reboot that does not bring the instance back, or one that does not clear the fault). The choice is made when
// RebootInstances is called.
type RebootHangFault = NoNodeFault

// bootID is the boot ID of the instance's Node after n reboots.
func bootID(instanceID string, n int) string {
	return fmt.Sprintf("%s-boot-%d", instanceID, n)
}

// rebootInstances is EC2 RebootInstances: every named instance must exist and be running (or pending, which EC2
// accepts and ignores). A running instance's Node goes NotReady for Timing.Reboot, then comes back with a new boot
// ID, unless a reboot-hang fault matches.
func (s *Simulator) rebootInstances(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	ids := p.strings("InstanceId")
	if len(ids) == 0 {
		return nil, errMissingParam("InstanceId")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if i, ok := a.instances[id]; !ok || i.State == StateTerminated {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, errBadRequest("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	for _, id := range ids {
		if i := a.instances[id]; i.State == StateShuttingDown {
			return nil, errBadRequest("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be rebooted.", id)
		}
	}
	now := s.clock.Now()
	for _, id := range ids {
		i := a.instances[id]
		if i.State != StateRunning {
			continue
		}
		i.reboots++
		i.node.reboot = rebootProgress{pending: true, until: now.Add(s.opts.Timing.Reboot), hang: s.takeRebootHangLocked(i.Tags)}
		s.log.Info("instance rebooting", "instance-id", id, "node", i.PrivateDNS, "hang", i.node.reboot.hang)
	}
	return []*el{B("return", true)}, nil
}

// rebootProgress is where a reboot of the instance's Node stands.
type rebootProgress struct {
	// pending says the Node has not been made NotReady yet; active that it has, and the reboot ends at until
	// (never, with hang).
	pending, active, hang bool
	until                 time.Time
}

// takeRebootHangLocked reports whether a reboot-hang fault matches the instance, using up one of its count.
func (s *Simulator) takeRebootHangLocked(tags tagSet) bool {
	for n, f := range s.faults.RebootHang {
		if !f.matches(tags) {
			continue
		}
		if f.Count > 0 {
			if f.Count == 1 {
				s.faults.RebootHang = append(s.faults.RebootHang[:n:n], s.faults.RebootHang[n+1:]...)
			} else {
				s.faults.RebootHang[n].Count--
			}
		}
		return true
	}
	return false
}

// AddRebootHangFault adds a fault: the next reboots of matching instances never end.
func (s *Simulator) AddRebootHangFault(f RebootHangFault) error {
	if err := validateNoNodeFault(f); err != nil {
		return fmt.Errorf("rebootHang: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Tags = copyMap(f.Tags)
	s.faults.RebootHang = append(s.faults.RebootHang, f)
	return nil
}

// ClearRebootHangFaults removes every reboot-hang fault; reboots already hanging stay so.
func (s *Simulator) ClearRebootHangFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.RebootHang = nil
}
