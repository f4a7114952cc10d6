package awssim

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// maxCallRecords bounds the call log; older records are dropped first (and counted).
const maxCallRecords = 50000

// CallRecord is one EC2 or IAM call that creates, changes or deletes something (every action but Describe*,
// Get* and List*), as the simulator answered it, with the resources it named and their tags at that moment.
// Tests read it to prove who touched what (for example that one cluster's controller never terminated, tagged
// or deleted another cluster's instances, launch templates or instance profiles).
type CallRecord struct {
	// Seq numbers records from 1 in the order they were made.
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Caller is the application id in the caller's User-Agent (app/<id>, which AWS SDKs set from
	// AWS_SDK_UA_APP_ID) or, without one, the access key id.
	Caller    string `json:"caller"`
	AccessKey string `json:"accessKey"`
	Service   string `json:"service"`
	Action    string `json:"action"`
	// Resources are the existing resources the call named (instances, launch templates, instance profiles...).
	// Resources a call creates have no ARN yet and are left out.
	Resources []CallResource `json:"resources,omitempty"`
	// Error is the error code of a refused or failed call; empty when it succeeded.
	Error string `json:"error,omitempty"`
}

// CallResource is a resource a call named and its tags when the call arrived.
type CallResource struct {
	ARN  string            `json:"arn"`
	Tags map[string]string `json:"tags,omitempty"`
}

// CallLog is what GET /_awssim/calls returns.
type CallLog struct {
	Records []CallRecord `json:"records"`
	// Dropped counts the oldest records removed to keep the log under its bound.
	Dropped int64 `json:"dropped"`
}

// callLog keeps CallRecords under its own lock.
type callLog struct {
	mu      sync.Mutex
	seq     int64
	dropped int64
	records []CallRecord
}

// mutating reports whether an action changes something (everything but Describe*, Get* and List*).
func mutating(action string) bool {
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(action, p) {
			return false
		}
	}
	return action != ""
}

var uaAppRE = regexp.MustCompile(`(?:^|\s)app/(\S+)`)

// callerOf names the caller of a request: the User-Agent's app id, else the access key id.
func callerOf(r *http.Request, a *account) string {
	if m := uaAppRE.FindStringSubmatch(r.Header.Get("User-Agent")); m != nil {
		return m[1]
	}
	return a.key
}

// recordCall appends a record of a mutating call; checks are the call's authorization checks, which name the
// resources it acts on with their tags.
func (s *Simulator) recordCall(r *http.Request, a *account, service, action string, checks []authzCheck, apiErr *apiError) {
	rec := CallRecord{Time: s.clock.Now().UTC(), Caller: callerOf(r, a), AccessKey: a.key, Service: service, Action: action}
	if apiErr != nil {
		rec.Error = apiErr.Code
	}
	seen := map[string]bool{}
	for _, c := range checks {
		if c.resource == "*" || strings.HasSuffix(c.resource, "/*") || seen[c.resource] {
			continue
		}
		seen[c.resource] = true
		res := CallResource{ARN: c.resource}
		for k, v := range c.ctx {
			if tag, ok := strings.CutPrefix(k, "aws:ResourceTag/"); ok && len(v) > 0 {
				if res.Tags == nil {
					res.Tags = map[string]string{}
				}
				res.Tags[tag] = v[0]
			}
		}
		rec.Resources = append(rec.Resources, res)
	}
	sort.Slice(rec.Resources, func(i, j int) bool { return rec.Resources[i].ARN < rec.Resources[j].ARN })
	l := &s.callLog
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	rec.Seq = l.seq
	if len(l.records) >= maxCallRecords {
		n := len(l.records) - maxCallRecords + 1
		l.records = append(l.records[:0], l.records[n:]...)
		l.dropped += int64(n)
	}
	l.records = append(l.records, rec)
}

// CallRecords returns the mutating EC2 and IAM calls recorded since start, oldest first.
func (s *Simulator) CallRecords() CallLog {
	l := &s.callLog
	l.mu.Lock()
	defer l.mu.Unlock()
	return CallLog{Records: append([]CallRecord(nil), l.records...), Dropped: l.dropped}
}
