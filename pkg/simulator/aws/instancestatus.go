package awssim

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Status-check summaries and detail statuses, as EC2 spells them.
const (
	statusOK            = "ok"
	statusImpaired      = "impaired"
	statusInitializing  = "initializing"
	statusNotApplicable = "not-applicable"
	detailPassed        = "passed"
	detailFailed        = "failed"
)

// scheduledEventCodes are the scheduled event codes EC2 reports in DescribeInstanceStatus.
var scheduledEventCodes = map[string]bool{
	"instance-reboot": true, "system-reboot": true, "system-maintenance": true, "instance-retirement": true,
	"instance-stop": true,
}

// instanceHealth is the injected status-check state of one instance.
type instanceHealth struct {
	instanceImpairedSince time.Time // zero: the instance check passes
	systemImpairedSince   time.Time // zero: the system check passes
	events                []scheduledEvent
}

type scheduledEvent struct {
	ID, Code, Description string
	NotBefore, NotAfter   time.Time
}

// InstanceStatusRequest sets what DescribeInstanceStatus reports for an instance: its instance and system
// status checks and its scheduled events. It replaces what an earlier request set.
type InstanceStatusRequest struct {
	// InstanceStatus is "ok" (the default) or "impaired": the instance reachability check fails.
	InstanceStatus string `json:"instanceStatus,omitempty"`
	// SystemStatus is "ok" (the default) or "impaired": the system reachability check fails.
	SystemStatus string `json:"systemStatus,omitempty"`
	// ImpairedSince is when the failing checks started failing (default: now). A time in the past makes an
	// instance look impaired for long already.
	ImpairedSince *time.Time `json:"impairedSince,omitempty"`
	// Events are scheduled events (instance-reboot, system-reboot, system-maintenance, instance-retirement,
	// instance-stop).
	Events []ScheduledEventRequest `json:"events,omitempty"`
}

// ScheduledEventRequest is one scheduled event of an InstanceStatusRequest.
type ScheduledEventRequest struct {
	Code        string `json:"code"`
	Description string `json:"description,omitempty"`
	// NotBefore is the earliest start of the event (default: a day from now).
	NotBefore *time.Time `json:"notBefore,omitempty"`
	// NotAfter is the latest end of the event (default: a week after NotBefore).
	NotAfter *time.Time `json:"notAfter,omitempty"`
}

// SetInstanceStatus applies an InstanceStatusRequest to the instance of that id (in any account).
func (s *Simulator) SetInstanceStatus(id string, req InstanceStatusRequest) error {
	for _, v := range []struct{ name, value string }{{"instanceStatus", req.InstanceStatus}, {"systemStatus", req.SystemStatus}} {
		if v.value != "" && v.value != statusOK && v.value != statusImpaired {
			return fmt.Errorf("%s must be ok or impaired, got %q", v.name, v.value)
		}
	}
	for _, e := range req.Events {
		if !scheduledEventCodes[e.Code] {
			return fmt.Errorf("event code %q is not one of instance-reboot, system-reboot, system-maintenance, instance-retirement, instance-stop", e.Code)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, i := s.findInstanceLocked(id)
	if i == nil {
		return fmt.Errorf("instance %q not found in any account", id)
	}
	now := s.clock.Now()
	since := now
	if req.ImpairedSince != nil {
		since = *req.ImpairedSince
	}
	h := &instanceHealth{}
	if req.InstanceStatus == statusImpaired {
		h.instanceImpairedSince = since
	}
	if req.SystemStatus == statusImpaired {
		h.systemImpairedSince = since
	}
	for _, e := range req.Events {
		ev := scheduledEvent{ID: "instance-event-" + strings.TrimPrefix(s.nextIDLocked("x"), "x-"), Code: e.Code,
			Description: e.Description, NotBefore: now.Add(24 * time.Hour)}
		if ev.Description == "" {
			ev.Description = "The instance is scheduled for " + e.Code
		}
		if e.NotBefore != nil {
			ev.NotBefore = *e.NotBefore
		}
		ev.NotAfter = ev.NotBefore.Add(7 * 24 * time.Hour)
		if e.NotAfter != nil {
			ev.NotAfter = *e.NotAfter
		}
		h.events = append(h.events, ev)
	}
	if h.instanceImpairedSince.IsZero() && h.systemImpairedSince.IsZero() && len(h.events) == 0 {
		h = nil
	}
	i.health = h
	s.log.Info("instance status set", "instance-id", id, "instance-status", req.InstanceStatus,
		"system-status", req.SystemStatus, "events", len(req.Events))
	return nil
}

// statusSummary is one of the two reachability checks of an instance, as DescribeInstanceStatus reports it.
type statusSummary struct {
	status         string
	detail         string // passed, failed, initializing; "" when not applicable
	impairedSinceT time.Time
}

func (i *instance) statusCheck(impairedSince func(*instanceHealth) time.Time) statusSummary {
	switch i.State {
	case StateRunning:
	case StatePending:
		return statusSummary{status: statusInitializing, detail: statusInitializing}
	default:
		return statusSummary{status: statusNotApplicable}
	}
	if i.health != nil {
		if t := impairedSince(i.health); !t.IsZero() {
			return statusSummary{status: statusImpaired, detail: detailFailed, impairedSinceT: t}
		}
	}
	return statusSummary{status: statusOK, detail: detailPassed}
}

func (i *instance) instanceCheck() statusSummary {
	return i.statusCheck(func(h *instanceHealth) time.Time { return h.instanceImpairedSince })
}

func (i *instance) systemCheck() statusSummary {
	return i.statusCheck(func(h *instanceHealth) time.Time { return h.systemImpairedSince })
}

func (i *instance) scheduledEvents() []scheduledEvent {
	if i.health == nil || (i.State != StateRunning && i.State != StatePending) {
		return nil
	}
	return i.health.events
}

func (c statusSummary) xml(name string) *el {
	var details []*el
	if c.detail != "" {
		var since *el
		if !c.impairedSinceT.IsZero() {
			since = TS("impairedSince", c.impairedSinceT)
		}
		details = append(details, E("item", T("name", "reachability"), T("status", c.detail), since))
	}
	return E(name, T("status", c.status), List("details", "item", details))
}

// instanceStatusValues are the filters DescribeInstanceStatus supports.
func instanceStatusValues(i *instance) valuesFunc {
	return func(name string) ([]string, bool) {
		events := i.scheduledEvents()
		eventField := func(f func(scheduledEvent) string) []string {
			var out []string
			for _, e := range events {
				out = append(out, f(e))
			}
			return out
		}
		switch name {
		case "availability-zone":
			return []string{i.Zone}, true
		case "instance-state-name":
			return []string{i.State}, true
		case "instance-state-code":
			return []string{fmt.Sprint(stateCodes[i.State])}, true
		case "instance-status.status":
			return []string{i.instanceCheck().status}, true
		case "instance-status.reachability":
			return []string{i.instanceCheck().detail}, true
		case "system-status.status":
			return []string{i.systemCheck().status}, true
		case "system-status.reachability":
			return []string{i.systemCheck().detail}, true
		case "event.code":
			return eventField(func(e scheduledEvent) string { return e.Code }), true
		case "event.description":
			return eventField(func(e scheduledEvent) string { return e.Description }), true
		case "event.instance-event-id":
			return eventField(func(e scheduledEvent) string { return e.ID }), true
		case "event.not-before":
			return eventField(func(e scheduledEvent) string { return e.NotBefore.UTC().Format(time.RFC3339) }), true
		case "event.not-after":
			return eventField(func(e scheduledEvent) string { return e.NotAfter.UTC().Format(time.RFC3339) }), true
		}
		return nil, false
	}
}

// describeInstanceStatus answers DescribeInstanceStatus: running instances (every state with
// IncludeAllInstances=true), by id or filter, paginated like DescribeInstances (MaxResults 5..1000, not with
// InstanceId).
func (s *Simulator) describeInstanceStatus(_ *http.Request, a *account, p params) ([]*el, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := p.strings("InstanceId")
	all := p.get("IncludeAllInstances") == "true"
	if len(ids) > 0 && p.has("MaxResults") {
		return nil, errInvalidParam("The parameter instancesSet cannot be used with the parameter maxResults")
	}
	if p.has("MaxResults") {
		if n, ok := p.intOr("MaxResults", 0); !ok || n < 5 || n > 1000 {
			return nil, errInvalidParam("Value ( %s ) for parameter maxResults is invalid. Expecting a value between 5 and 1000", p.get("MaxResults"))
		}
	}
	fs := p.filters()
	for _, f := range fs {
		if strings.HasPrefix(f.Name, "tag") {
			return nil, errBadRequest("InvalidParameterValue", "The filter '%s' is invalid", f.Name)
		}
	}
	if err := validateFilters(fs, instanceStatusValues(&instance{})); err != nil {
		return nil, err
	}
	var selected []*instance
	if len(ids) > 0 {
		var missing []string
		for _, id := range ids {
			i, ok := a.instances[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			selected = append(selected, i)
		}
		if len(missing) > 0 {
			return nil, errBadRequest("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
		}
	} else {
		selected = a.sortedInstances()
	}
	var matched []*instance
	for _, i := range selected {
		if !all && i.State != StateRunning {
			continue
		}
		ok, err := matchFilters(fs, instanceStatusValues(i), nil)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, i)
		}
	}
	items, next, err := page(matched, p, len(matched)+1, 0)
	if err != nil {
		return nil, err
	}
	var out []*el
	for _, i := range items {
		var events []*el
		for _, e := range i.scheduledEvents() {
			events = append(events, E("item", T("instanceEventId", e.ID), T("code", e.Code), T("description", e.Description),
				TS("notBefore", e.NotBefore), TS("notAfter", e.NotAfter)))
		}
		var eventsSet *el
		if len(events) > 0 {
			eventsSet = List("eventsSet", "item", events)
		}
		var ebs *el
		if i.State == StateRunning {
			ebs = E("attachedEbsStatus", T("status", statusOK))
		}
		out = append(out, E("item", T("instanceId", i.ID), T("availabilityZone", i.Zone), TOpt("availabilityZoneId", i.ZoneID),
			eventsSet, E("instanceState", I("code", stateCodes[i.State]), T("name", i.State)),
			i.systemCheck().xml("systemStatus"), i.instanceCheck().xml("instanceStatus"),
			ebs))
	}
	return []*el{List("instanceStatusSet", "item", out), next}, nil
}
