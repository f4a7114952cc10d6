package awssim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// The services `dovetailctl doctor` reads to check an account's setup: STS (who am I), IAM policy simulation
// (may I), the interruption queue's policy and the EventBridge rules that feed it. Each answers from the
// simulated account unless a SetupFaults switch says otherwise.

const (
	stsVersion = "2011-06-15"
	stsXMLNS   = "https://sts.amazonaws.com/doc/2011-06-15/"
)

// SetupFaults break the account setup `dovetailctl doctor` checks, one switch per check.
type SetupFaults struct {
	// IdentityError makes STS GetCallerIdentity fail with this error code (e.g. ExpiredToken,
	// InvalidClientTokenId).
	IdentityError string `json:"identityError,omitempty"`
	// DeniedActions are IAM actions (globs such as "ec2:CreateFleet" or "iam:*") IAM SimulatePrincipalPolicy
	// reports as implicitDeny; every other action is allowed.
	DeniedActions []string `json:"deniedActions,omitempty"`
	// QueuePolicyMissing leaves the queues' Policy attribute without the statement allowing EventBridge
	// (events.amazonaws.com) to send messages.
	QueuePolicyMissing bool `json:"queuePolicyMissing,omitempty"`
	// MissingEventRules removes EventBridge rules of these kinds (ScheduledChange, SpotInterruption, Rebalance,
	// InstanceStateChange; globs allowed).
	MissingEventRules []string `json:"missingEventRules,omitempty"`
}

// eventRuleKinds are the four EventBridge rules an interruption queue is fed by, with their event patterns.
var eventRuleKinds = []struct{ Kind, Pattern string }{
	{"ScheduledChange", `{"source":["aws.health"],"detail-type":["AWS Health Event"]}`},
	{"SpotInterruption", `{"source":["aws.ec2"],"detail-type":["EC2 Spot Instance Interruption Warning"]}`},
	{"Rebalance", `{"source":["aws.ec2"],"detail-type":["EC2 Instance Rebalance Recommendation"]}`},
	{"InstanceStateChange", `{"source":["aws.ec2"],"detail-type":["EC2 Instance State-change Notification"]}`},
}

func (s *Simulator) setupFaults() SetupFaults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults.Setup
	f.DeniedActions = append([]string(nil), f.DeniedActions...)
	f.MissingEventRules = append([]string(nil), f.MissingEventRules...)
	return f
}

func matchesAny(patterns []string, v string) bool {
	for _, p := range patterns {
		if globMatch(p, v) {
			return true
		}
	}
	return false
}

// serveSTS answers STS (query protocol): GetCallerIdentity.
func (s *Simulator) serveSTS(w http.ResponseWriter, r *http.Request, a *account, p params) {
	action := p.get("Action")
	reqID := s.requestID()
	writeErr := func(e *apiError) {
		typ := "Receiver"
		if e.Sender {
			typ = "Sender"
		}
		writeXML(w, e.Status, renderXML(E("ErrorResponse", E("Error", T("Type", typ), T("Code", e.Code), T("Message", e.Message)), T("RequestId", reqID)), stsXMLNS))
	}
	if err := s.applyFaults(r, "iam", action); err != nil {
		writeErr(err)
		return
	}
	if action != "GetCallerIdentity" {
		writeErr(errBadRequest("InvalidAction", "awssim does not simulate STS %s", action))
		return
	}
	if code := s.setupFaults().IdentityError; code != "" {
		writeErr(&apiError{Status: http.StatusForbidden, Code: code, Message: "The security token included in the request is invalid (awssim fault).", Sender: true})
		return
	}
	arn := fmt.Sprintf("arn:aws:sts::%s:assumed-role/DovetailController/%s", a.number, a.key)
	result := E("GetCallerIdentityResult", T("Arn", arn), T("UserId", "AROA"+strings.ToUpper(a.number)+":"+a.key), T("Account", a.number))
	writeXML(w, http.StatusOK, renderXML(E("GetCallerIdentityResponse", result, E("ResponseMetadata", T("RequestId", reqID))), stsXMLNS))
}

// iamSimulatePrincipalPolicy answers every action allowed on "*" unless SetupFaults.DeniedActions matches it.
func (s *Simulator) iamSimulatePrincipalPolicy(a *account, p params) (*el, *apiError) {
	src := p.get("PolicySourceArn")
	if !strings.HasPrefix(src, "arn:aws:iam::") && !strings.HasPrefix(src, "arn:aws:sts::") {
		return nil, errBadRequest("InvalidInput", "PolicySourceArn %q is not an IAM user, group or role ARN", src)
	}
	actions := p.strings("ActionNames.member")
	if len(actions) == 0 {
		return nil, errBadRequest("InvalidInput", "ActionNames must name at least one action")
	}
	denied := s.setupFaults().DeniedActions
	var results []*el
	for _, act := range actions {
		decision := "allowed"
		if matchesAny(denied, act) {
			decision = "implicitDeny"
		}
		results = append(results, E("member", T("EvalActionName", act), T("EvalResourceName", "*"), T("EvalDecision", decision)))
	}
	return E("", List("EvaluationResults", "member", results), B("IsTruncated", false)), nil
}

// queuePolicyLocked is the Policy attribute of a queue: EventBridge and SQS may send to it, unless the fault
// says not. Called with s.mu held.
func (s *Simulator) queuePolicyLocked(arn string) string {
	principals := []string{"sqs.amazonaws.com"}
	if !s.faults.Setup.QueuePolicyMissing {
		principals = []string{"events.amazonaws.com", "sqs.amazonaws.com"}
	}
	b, _ := json.Marshal(map[string]any{
		"Version": "2012-10-17",
		"Id":      "EC2InterruptionPolicy",
		"Statement": []any{map[string]any{
			"Effect": "Allow", "Principal": map[string]any{"Service": principals},
			"Action": "sqs:SendMessage", "Resource": arn,
		}},
	})
	return string(b)
}

func (s *Simulator) sqsListQueues(r *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ QueueNamePrefix string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	urls := []string{}
	for _, name := range sortedKeys(a.queues) {
		if strings.HasPrefix(name, in.QueueNamePrefix) {
			urls = append(urls, s.queueURL(r, a, name))
		}
	}
	return map[string]any{"QueueUrls": urls}, nil
}

// eventRule is one simulated EventBridge rule: <queue>-<Kind>, targeting the queue.
type eventRule struct {
	Name, Kind, Pattern, Queue string
}

// eventRules are the rules of an account: the four kinds for every queue, less the faulted kinds.
func (s *Simulator) eventRules(a *account) []eventRule {
	missing := s.setupFaults().MissingEventRules
	s.mu.Lock()
	queues := sortedKeys(a.queues)
	s.mu.Unlock()
	var out []eventRule
	for _, q := range queues {
		for _, k := range eventRuleKinds {
			if matchesAny(missing, k.Kind) {
				continue
			}
			out = append(out, eventRule{Name: q + "-" + k.Kind, Kind: k.Kind, Pattern: k.Pattern, Queue: q})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Simulator) eventsHandlers() map[string]jsonHandler {
	return map[string]jsonHandler{
		"ListRules":         s.eventsListRules,
		"ListTargetsByRule": s.eventsListTargetsByRule,
	}
}

func (s *Simulator) eventsListRules(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ NamePrefix, EventBusName string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	rules := []map[string]any{}
	for _, r := range s.eventRules(a) {
		if !strings.HasPrefix(r.Name, in.NamePrefix) {
			continue
		}
		rules = append(rules, map[string]any{
			"Name": r.Name, "Arn": fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", s.opts.Region, a.number, r.Name),
			"EventPattern": r.Pattern, "State": "ENABLED", "EventBusName": "default",
		})
	}
	return map[string]any{"Rules": rules}, nil
}

func (s *Simulator) eventsListTargetsByRule(_ *http.Request, a *account, body []byte) (any, *apiError) {
	var in struct{ Rule string }
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	for _, r := range s.eventRules(a) {
		if r.Name == in.Rule {
			return map[string]any{"Targets": []map[string]any{{
				"Id": "InterruptionQueueTarget", "Arn": fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.opts.Region, a.number, r.Queue),
			}}}, nil
		}
	}
	return nil, errBadRequest("ResourceNotFoundException", "Rule %s does not exist on EventBus default.", in.Rule)
}
