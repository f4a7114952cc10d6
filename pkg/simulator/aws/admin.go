package awssim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"
)

const adminPrefix = "/_awssim/"

// InstanceInfo is an instance as the admin API and `awssim instances` show it.
type InstanceInfo struct {
	Account       string `json:"account"`
	ID            string `json:"id"`
	Type          string `json:"type"`
	Zone          string `json:"zone"`
	CapacityType  string `json:"capacityType"`
	State         string `json:"state"`
	PrivateIP     string `json:"privateIp"`
	NodeName      string `json:"nodeName"`
	NodeCreated   bool   `json:"nodeCreated"`
	NodeReady     bool   `json:"nodeInitialized"`
	UserDataError string `json:"userDataError,omitempty"`
	// NodeWithheld says a NoNode fault keeps the instance from ever getting a Node.
	NodeWithheld bool              `json:"nodeWithheld,omitempty"`
	LaunchTime   time.Time         `json:"launchTime"`
	Tags         map[string]string `json:"tags"`

	// IPv6Address is the instance's IPv6 address (an IPv6 cluster's instance launched with one).
	IPv6Address string `json:"ipv6Address,omitempty"`
	// ClusterDNS is the cluster DNS address the instance's user data gives its kubelet (known once the
	// instance runs).
	ClusterDNS string `json:"clusterDNS,omitempty"`
	// NodeJoinError says why the instance cannot join the cluster (an IPv6 cluster's instance without an IPv6
	// address or an IPv6 cluster DNS address).
	NodeJoinError string `json:"nodeJoinError,omitempty"`
}

// State is the simulator's state dump.
type State struct {
	Region    string         `json:"region"`
	Cluster   string         `json:"cluster"`
	Instances []InstanceInfo `json:"instances"`
	Accounts  []AccountInfo  `json:"accounts"`
	Faults    Faults         `json:"faults"`
	// Calls counts the API calls answered since start, by action (throttled ones included).
	Calls map[string]int `json:"calls"`
	// ServiceCalls counts the same calls by service family: ec2, iam, ssm, pricing, sqs, eks, events, sts.
	ServiceCalls map[string]int `json:"serviceCalls"`
	// CapacityRefusals counts, by pool "type/zone/capacity-type", the launch requests an injected capacity fault
	// refused (one per CreateFleet override or RunInstances call that named the pool).
	CapacityRefusals map[string]int `json:"capacityRefusals"`
	// InstancesByNodeClaim counts, for each NodeClaim, the instances that ever carried its karpenter.sh/nodeclaim
	// tag (at launch or tagged later), terminated ones included: more than one means it was launched twice.
	InstancesByNodeClaim map[string]int `json:"instancesByNodeClaim"`
}

// AccountInfo summarises one account.
type AccountInfo struct {
	Key              string         `json:"key"`
	Number           string         `json:"number"`
	LaunchTemplates  []string       `json:"launchTemplates"`
	InstanceProfiles []string       `json:"instanceProfiles"`
	Queues           map[string]int `json:"queues"`
	Subnets          map[string]int `json:"subnetFreeIPs"`
}

// Instances lists every instance of every account, ordered by account then id.
func (s *Simulator) Instances() []InstanceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InstanceInfo
	for _, key := range sortedKeys(s.accounts) {
		for _, i := range s.accounts[key].sortedInstances() {
			tags := map[string]string{}
			for k, v := range i.Tags {
				tags[k] = v
			}
			out = append(out, InstanceInfo{Account: key, ID: i.ID, Type: i.Type, Zone: i.Zone, CapacityType: i.capacityType(),
				State: i.State, PrivateIP: i.PrivateIP, IPv6Address: i.IPv6Address, ClusterDNS: i.node.clusterDNS,
				NodeJoinError: i.node.joinError, NodeName: i.PrivateDNS, NodeCreated: i.node.created && !i.node.deleted,
				NodeReady: i.node.taintRemoved, UserDataError: i.node.userDataError, NodeWithheld: i.node.withheld,
				LaunchTime: i.LaunchTime, Tags: tags})
		}
	}
	return out
}

// LaunchRecord is one instance launch, as `GET /_awssim/launches` lists them: the simulator's record of every
// CreateFleet or RunInstances launch since start, kept after the instance is terminated and forgotten. Tags are
// the instance's tags now (or when it was forgotten), including those CreateTags added after the launch.
type LaunchRecord struct {
	Account      string            `json:"account"`
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Zone         string            `json:"zone"`
	CapacityType string            `json:"capacityType"`
	LaunchTime   time.Time         `json:"launchTime"`
	Tags         map[string]string `json:"tags"`
}

// Launches returns every launch since start, oldest first.
func (s *Simulator) Launches() []LaunchRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LaunchRecord, 0, len(s.launches))
	for _, l := range s.launches {
		i := l.inst
		out = append(out, LaunchRecord{Account: l.account, ID: i.ID, Type: i.Type, Zone: i.Zone,
			CapacityType: i.capacityType(), LaunchTime: i.LaunchTime, Tags: maps.Clone(map[string]string(i.Tags))})
	}
	return out
}

// launch is one entry of the launch record.
type launch struct {
	account string
	inst    *instance
}

// Calls returns how many calls of each action the simulator answered since start.
func (s *Simulator) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Snapshot returns the whole state dump.
func (s *Simulator) Snapshot() State {
	st := State{Region: s.opts.Region, Cluster: s.opts.ClusterName, Instances: s.Instances(), Faults: s.GetFaults(), Calls: s.Calls()}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Calls = make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		st.Calls[k] = v
	}
	st.ServiceCalls = maps.Clone(s.serviceCalls)
	st.CapacityRefusals = maps.Clone(s.capacityRefusals)
	if len(s.nodeClaimInstances) > 0 {
		st.InstancesByNodeClaim = make(map[string]int, len(s.nodeClaimInstances))
		for nc, ids := range s.nodeClaimInstances {
			st.InstancesByNodeClaim[nc] = len(ids)
		}
	}
	now := s.clock.Now()
	for _, key := range sortedKeys(s.accounts) {
		a := s.accounts[key]
		ai := AccountInfo{Key: key, Number: a.number, LaunchTemplates: sortedKeys(a.templates),
			InstanceProfiles: sortedKeys(a.profiles), Queues: map[string]int{}, Subnets: map[string]int{}}
		for n, q := range a.queues {
			visible := 0
			for _, m := range q.messages {
				if !now.Before(m.VisibleAt) {
					visible++
				}
			}
			ai.Queues[n] = visible
		}
		for _, sn := range a.subnets {
			ai.Subnets[sn.ID+" ("+sn.Zone+")"] = sn.available()
		}
		st.Accounts = append(st.Accounts, ai)
	}
	return st
}

// TerminateInstance terminates an instance out of band (as EC2 would on a hardware failure or spot reclaim).
func (s *Simulator) TerminateInstance(id, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, i := s.findInstanceLocked(id)
	if i == nil {
		return fmt.Errorf("instance %q not found in any account", id)
	}
	if reason == "" {
		reason = "Server.InternalError: terminated out of band by awssim"
	}
	if !s.beginTerminationLocked(i, reason) {
		return fmt.Errorf("instance %s is %s, not pending or running", id, i.State)
	}
	return nil
}

// SubnetIPRequest caps the free addresses of subnets (IP exhaustion).
type SubnetIPRequest struct {
	Account  string `json:"account,omitempty"`
	SubnetID string `json:"subnetId,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// Available is the cap on free addresses; -1 removes the cap.
	Available int `json:"available"`
}

// SetSubnetAvailableIPs applies a SubnetIPRequest; it returns how many subnets changed.
func (s *Simulator) SetSubnetAvailableIPs(req SubnetIPRequest) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	accts, err := s.adminAccountsLocked(req.Account)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range accts {
		for _, sn := range a.subnets {
			if (req.SubnetID == "" || sn.ID == req.SubnetID) && (req.Zone == "" || sn.Zone == req.Zone) {
				sn.maxAvailable = req.Available
				n++
			}
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no subnet matches id %q zone %q", req.SubnetID, req.Zone)
	}
	return n, nil
}

// CapacityReservationRequest creates a capacity reservation.
type CapacityReservationRequest struct {
	Account      string     `json:"account,omitempty"`
	InstanceType string     `json:"instanceType"`
	Zone         string     `json:"zone"`
	Count        int        `json:"count"`
	EndTime      *time.Time `json:"endTime,omitempty"`
	// Tags of the reservation.
	Tags map[string]string `json:"tags,omitempty"`
	// ReservationType is default (the default) or capacity-block; a capacity block needs EndTime.
	ReservationType string `json:"reservationType,omitempty"`
	// InstanceMatchCriteria is targeted (the default) or open.
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// OwnerID is the owning account number, for a reservation shared from another account (default: the
	// account's own number).
	OwnerID       string `json:"ownerId,omitempty"`
	Interruptible bool   `json:"interruptible,omitempty"`
}

// AddCapacityReservation creates an active capacity reservation and returns its id.
func (s *Simulator) AddCapacityReservation(req CapacityReservationRequest) (string, error) {
	if _, ok := s.cat.Type(req.InstanceType); !ok {
		return "", fmt.Errorf("instance type %q is not in the catalog", req.InstanceType)
	}
	if req.Count < 1 {
		return "", fmt.Errorf("count must be positive, got %d", req.Count)
	}
	if req.ReservationType == "" {
		req.ReservationType = "default"
	}
	if req.ReservationType != "default" && req.ReservationType != "capacity-block" {
		return "", fmt.Errorf("reservationType must be default or capacity-block, got %q", req.ReservationType)
	}
	if req.ReservationType == "capacity-block" && req.EndTime == nil {
		return "", fmt.Errorf("a capacity-block reservation needs endTime")
	}
	if req.InstanceMatchCriteria == "" {
		req.InstanceMatchCriteria = "targeted"
	}
	if req.InstanceMatchCriteria != "targeted" && req.InstanceMatchCriteria != "open" {
		return "", fmt.Errorf("instanceMatchCriteria must be open or targeted, got %q", req.InstanceMatchCriteria)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, z := range s.zones {
		found = found || z.Name == req.Zone
	}
	if !found {
		return "", fmt.Errorf("zone %q is not simulated", req.Zone)
	}
	accts, err := s.adminAccountsLocked(req.Account)
	if err != nil {
		return "", err
	}
	if len(accts) != 1 {
		return "", fmt.Errorf("%d accounts exist; name one", len(accts))
	}
	tags := tagSet{}
	for k, v := range req.Tags {
		tags[k] = v
	}
	owner := req.OwnerID
	if owner == "" {
		owner = accts[0].number
	}
	cr := &capacityReservation{ID: "cr-" + strings.TrimPrefix(s.nextIDLocked("x"), "x-"), InstanceType: req.InstanceType,
		Zone: req.Zone, State: "active", Total: req.Count, Available: req.Count, Tags: tags, OwnerID: owner,
		ReservationType: req.ReservationType, MatchCriteria: req.InstanceMatchCriteria, Interruptible: req.Interruptible}
	if req.EndTime != nil {
		cr.End = *req.EndTime
	}
	accts[0].reservations = append(accts[0].reservations, cr)
	return cr.ID, nil
}

// ReleaseAMIs publishes a new release of every simulated AMI and moves the SSM "latest" parameters to it.
func (s *Simulator) ReleaseAMIs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for _, a := range s.accounts {
		s.releaseAMIsLocked(a, now)
	}
}

// SetKubernetesVersion upgrades (or downgrades) the simulated control plane: EKS DescribeCluster answers the new
// version, AMIs for it are published with their SSM parameters (those of earlier versions stay), and Nodes created
// from now on report it.
func (s *Simulator) SetKubernetesVersion(v string) error {
	if !kubernetesVersionPattern.MatchString(v) {
		return fmt.Errorf("kubernetes version %q must look like 1.34", v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == s.k8sVersion {
		return nil
	}
	s.k8sVersion = v
	now := s.clock.Now()
	for _, k := range sortedKeys(s.accounts) {
		s.releaseAMIsLocked(s.accounts[k], now)
	}
	s.log.Info("kubernetes version changed", "version", v)
	return nil
}

// adminAccountsLocked resolves an admin account selector: a key, or "" for every account (creating the
// default account when none exists yet).
func (s *Simulator) adminAccountsLocked(key string) ([]*account, error) {
	if key != "" {
		return []*account{s.accountLocked(key)}, nil
	}
	if len(s.accounts) == 0 {
		return []*account{s.accountLocked("default")}, nil
	}
	var out []*account
	for _, k := range sortedKeys(s.accounts) {
		out = append(out, s.accounts[k])
	}
	return out, nil
}

// serveAdmin is the JSON admin API under /_awssim/.
func (s *Simulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, adminPrefix), "/")
	route := r.Method + " " + path
	switch {
	case route == "GET healthz":
		writeAdmin(w, http.StatusOK, map[string]string{"status": "ok"})
	case route == "GET state":
		writeAdmin(w, http.StatusOK, s.Snapshot())
	case route == "GET instances":
		writeAdmin(w, http.StatusOK, s.Instances())
	case route == "GET calls":
		writeAdmin(w, http.StatusOK, s.CallRecords())
	case route == "GET launches":
		writeAdmin(w, http.StatusOK, s.Launches())
	case route == "GET iam-policy":
		writeAdmin(w, http.StatusOK, s.IAMPolicyStatus())
	case route == "PUT iam-policy/denied":
		var d struct {
			Actions []string `json:"actions"`
		}
		if !readAdmin(w, r, &d) {
			return
		}
		s.DenyActions(d.Actions...)
		writeAdmin(w, http.StatusOK, s.IAMPolicyStatus())
	case route == "DELETE iam-policy/denied":
		s.DenyActions()
		writeAdmin(w, http.StatusOK, s.IAMPolicyStatus())
	case route == "POST iam-policy/suspend", route == "POST iam-policy/resume":
		s.SuspendIAMPolicy(strings.HasSuffix(path, "suspend"))
		writeAdmin(w, http.StatusOK, s.IAMPolicyStatus())
	case route == "GET zonal-shifts":
		writeAdmin(w, http.StatusOK, s.ZonalShifts())
	case route == "POST zonal-shifts":
		var req struct {
			AwayFrom  string `json:"awayFrom"`
			ExpiresIn string `json:"expiresIn"`
			Comment   string `json:"comment"`
		}
		if !readAdmin(w, r, &req) {
			return
		}
		d, err := time.ParseDuration(req.ExpiresIn)
		if err != nil {
			adminError(w, http.StatusBadRequest, fmt.Errorf("expiresIn: %w", err))
			return
		}
		zs, err := s.StartZonalShift(req.AwayFrom, d, req.Comment)
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, zs)
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "zonal-shifts/"):
		if !s.CancelZonalShift(strings.TrimPrefix(path, "zonal-shifts/")) {
			adminError(w, http.StatusNotFound, fmt.Errorf("no zonal shift %s", strings.TrimPrefix(path, "zonal-shifts/")))
			return
		}
		writeAdmin(w, http.StatusOK, s.ZonalShifts())
	case route == "GET faults":
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "PUT faults":
		var f Faults
		if !readAdmin(w, r, &f) {
			return
		}
		if err := validateFaults(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		s.SetFaults(f)
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "DELETE faults":
		s.ClearFaults()
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "POST faults/capacity":
		var f CapacityFault
		if !readAdmin(w, r, &f) {
			return
		}
		s.AddCapacityFault(f)
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "POST faults/no-node":
		var f NoNodeFault
		if !readAdmin(w, r, &f) {
			return
		}
		if err := s.AddNoNodeFault(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "DELETE faults/no-node":
		s.ClearNoNodeFaults()
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "POST faults/reboot-hang":
		var f RebootHangFault
		if !readAdmin(w, r, &f) {
			return
		}
		if err := s.AddRebootHangFault(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "DELETE faults/reboot-hang":
		s.ClearRebootHangFaults()
		writeAdmin(w, http.StatusOK, s.GetFaults())
	case route == "POST faults/throttle":
		var t ThrottleFault
		if !readAdmin(w, r, &t) {
			return
		}
		f := s.GetFaults()
		f.Throttle = t
		if err := validateFaults(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		s.SetFaults(f)
		writeAdmin(w, http.StatusOK, f)
	case route == "POST faults/latency":
		var body struct {
			Latency Duration `json:"latency"`
		}
		if !readAdmin(w, r, &body) {
			return
		}
		f := s.GetFaults()
		f.Latency = body.Latency
		if err := validateFaults(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		s.SetFaults(f)
		writeAdmin(w, http.StatusOK, f)
	case route == "POST faults/consistency":
		var body struct {
			NotFoundAfterLaunch Duration `json:"notFoundAfterLaunch"`
		}
		if !readAdmin(w, r, &body) {
			return
		}
		f := s.GetFaults()
		f.NotFoundAfterLaunch = body.NotFoundAfterLaunch
		if err := validateFaults(f); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		s.SetFaults(f)
		writeAdmin(w, http.StatusOK, f)
	case route == "POST faults/setup":
		var sf SetupFaults
		if !readAdmin(w, r, &sf) {
			return
		}
		f := s.GetFaults()
		f.Setup = sf
		s.SetFaults(f)
		writeAdmin(w, http.StatusOK, f)
	case route == "POST faults/subnet-ips":
		var req SubnetIPRequest
		if !readAdmin(w, r, &req) {
			return
		}
		n, err := s.SetSubnetAvailableIPs(req)
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, map[string]int{"subnets": n})
	case route == "POST events":
		var req EventRequest
		if !readAdmin(w, r, &req) {
			return
		}
		body, err := s.SendEvent(req)
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, json.RawMessage(body))
	case route == "POST capacity-reservations":
		var req CapacityReservationRequest
		if !readAdmin(w, r, &req) {
			return
		}
		id, err := s.AddCapacityReservation(req)
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, map[string]string{"capacityReservationId": id})
	case route == "POST spot-prices":
		var req SpotPriceRequest
		if !readAdmin(w, r, &req) {
			return
		}
		if err := s.SetSpotPrice(req); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, req)
	case route == "POST kubernetes-version":
		var body struct {
			Version string `json:"version"`
		}
		if !readAdmin(w, r, &body) {
			return
		}
		if err := s.SetKubernetesVersion(body.Version); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, map[string]string{"version": body.Version})
	case route == "POST amis/release":
		s.ReleaseAMIs()
		writeAdmin(w, http.StatusOK, map[string]string{"released": "ok"})
	case r.Method == http.MethodPost && strings.HasPrefix(path, "instances/") && strings.HasSuffix(path, "/status"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "instances/"), "/status")
		var req InstanceStatusRequest
		if !readAdmin(w, r, &req) {
			return
		}
		if err := s.SetInstanceStatus(id, req); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeAdmin(w, http.StatusOK, map[string]any{"instanceId": id, "status": req})
	case r.Method == http.MethodPost && strings.HasPrefix(path, "instances/") && strings.HasSuffix(path, "/terminate"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "instances/"), "/terminate")
		var body struct {
			Reason string `json:"reason"`
		}
		if r.ContentLength > 0 && !readAdmin(w, r, &body) {
			return
		}
		if err := s.TerminateInstance(id, body.Reason); err != nil {
			adminError(w, http.StatusNotFound, err)
			return
		}
		writeAdmin(w, http.StatusOK, map[string]string{"terminated": id})
	default:
		adminError(w, http.StatusNotFound, fmt.Errorf("no admin route %s %s", r.Method, r.URL.Path))
	}
}

func validateFaults(f Faults) error {
	if f.Throttle.Rate < 0 || f.Throttle.Rate > 1 {
		return fmt.Errorf("throttle rate %v must be between 0 and 1", f.Throttle.Rate)
	}
	for _, svc := range f.Throttle.Services {
		if _, ok := throttleCodes[svc]; !ok {
			return fmt.Errorf("throttle service %q is not one of ec2, iam, ssm, pricing, sqs, eks, events", svc)
		}
	}
	for _, cf := range f.Capacity {
		if cf.Available < 0 {
			return fmt.Errorf("capacity fault %+v: available must not be negative", cf)
		}
	}
	for _, nf := range f.NoNode {
		if err := validateNoNodeFault(nf); err != nil {
			return err
		}
	}
	if f.Latency < 0 || f.NotFoundAfterLaunch < 0 {
		return fmt.Errorf("durations must not be negative (latency %v, notFoundAfterLaunch %v)",
			time.Duration(f.Latency), time.Duration(f.NotFoundAfterLaunch))
	}
	return nil
}

func readAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("decoding request body: %w", err))
		return false
	}
	return true
}

func writeAdmin(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func adminError(w http.ResponseWriter, status int, err error) {
	writeAdmin(w, status, map[string]string{"error": err.Error()})
}
