package awssim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/dovetail/dovetail/pkg/iampolicy"
)

// authzCheck is one action on one resource to authorize, with its condition keys.
type authzCheck struct {
	action   string
	resource string
	ctx      map[string][]string
}

// policyState is the enforced policy template, its variables, and its rendering per account number.
type policyState struct {
	template  []byte
	vars      map[string]string
	byAccount map[string]*iampolicy.Policy
	// suspended lets every call through until resumed (tests set up another principal's resources this way).
	suspended bool
	// denied are actions refused to every caller, policy or not (lower case; tests take one permission away).
	denied map[string]bool
}

// IAMPolicyState is what the admin API reports about the enforced policy.
type IAMPolicyState struct {
	Enforced  bool   `json:"enforced"`
	Suspended bool   `json:"suspended"`
	Digest    string `json:"digest,omitempty"`
	// Denied are the actions refused to every caller (DenyActions).
	Denied []string `json:"denied,omitempty"`
}

// IAMPolicyStatus reports whether a policy is set and enforced.
func (s *Simulator) IAMPolicyStatus() IAMPolicyState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := IAMPolicyState{Enforced: len(s.policy.template) > 0 && !s.policy.suspended, Suspended: s.policy.suspended}
	if len(s.policy.template) > 0 {
		st.Digest = policyDigest(s.policy.template)
	}
	st.Denied = sortedKeys(s.policy.denied)
	return st
}

// DenyActions refuses the actions (e.g. "ec2:RunInstances") to every caller, with or without a policy, as an
// explicit deny would, until called again; no actions lifts the refusal. Suspending enforcement lifts it too.
func (s *Simulator) DenyActions(actions ...string) {
	denied := map[string]bool{}
	for _, a := range actions {
		denied[strings.ToLower(a)] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy.denied = denied
	s.log.Info("IAM actions denied to every caller", "actions", actions)
}

// deniedActions returns the actions refused to every caller (nil while enforcement is suspended).
func (s *Simulator) deniedActions() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policy.suspended {
		return nil
	}
	return s.policy.denied
}

// SuspendIAMPolicy stops (true) or restarts (false) enforcing the policy without forgetting it.
func (s *Simulator) SuspendIAMPolicy(suspend bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy.suspended = suspend
	s.log.Info("IAM policy enforcement", "suspended", suspend)
}

// SetIAMPolicy replaces the enforced IAM policy (see Options.IAMPolicy); an empty template stops enforcement.
// The template is rendered and parsed here, so a bad policy is an error now rather than on a later call.
func (s *Simulator) SetIAMPolicy(template []byte, vars map[string]string) error {
	st := policyState{template: template, vars: vars, byAccount: map[string]*iampolicy.Policy{}}
	if len(template) > 0 {
		if _, err := renderPolicy(template, s.policyVars(vars, "000000000000")); err != nil {
			return fmt.Errorf("IAM policy: %w", err)
		}
		s.log.Info("enforcing an IAM policy", "digest", policyDigest(template))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.denied = s.policy.denied
	s.policy = st
	return nil
}

// policyFor returns the policy rendered for the account (cached), or nil when none is enforced.
func (s *Simulator) policyFor(a *account) (*iampolicy.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.policy.template) == 0 || s.policy.suspended {
		return nil, nil
	}
	if p, ok := s.policy.byAccount[a.number]; ok {
		return p, nil
	}
	p, err := renderPolicy(s.policy.template, s.policyVars(s.policy.vars, a.number))
	if err != nil {
		return nil, err
	}
	s.policy.byAccount[a.number] = p
	return p, nil
}

// policyVars are the template variables: the simulator's defaults, then vars.
func (s *Simulator) policyVars(vars map[string]string, accountNumber string) map[string]string {
	out := map[string]string{
		"AWS_PARTITION":      "aws",
		"AWS_REGION":         s.opts.Region,
		"AWS_ACCOUNT_ID":     accountNumber,
		"CLUSTER_NAME":       s.opts.ClusterName,
		"INTERRUPTION_QUEUE": s.opts.Queues[0],
	}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

func renderPolicy(template []byte, vars map[string]string) (*iampolicy.Policy, error) {
	b, err := iampolicy.Render(template, vars)
	if err != nil {
		return nil, err
	}
	return iampolicy.Parse(b)
}

// authorize evaluates the checks of one call against the policy; nil when there is no policy or every
// check is allowed. checksOf is called only when a policy is enforced. The first denied check names the action and resource in the error, as AWS does.
func (s *Simulator) authorize(a *account, service string, checksOf func() []authzCheck) *apiError {
	p, err := s.policyFor(a)
	denied := s.deniedActions()
	if p == nil && err == nil && len(denied) == 0 {
		return nil
	}
	if err != nil {
		// Validated in New; a failure here is a bug, and failing closed is the safe answer.
		return &apiError{Status: http.StatusInternalServerError, Code: "InternalError", Message: err.Error()}
	}
	for _, c := range checksOf() {
		if denied[strings.ToLower(c.action)] {
			s.log.Info("IAM action denied to every caller", "account", a.number, "action", c.action, "resource", c.resource)
			return deniedError(a, service, c, iampolicy.ExplicitDeny)
		}
		if p == nil {
			continue
		}
		d := p.Evaluate(iampolicy.Request{Action: c.action, Resource: c.resource, Context: c.ctx})
		if d == iampolicy.Allowed {
			continue
		}
		s.log.Info("IAM policy denied a call", "account", a.number, "action", c.action, "resource", c.resource, "decision", d.String())
		return deniedError(a, service, c, d)
	}
	return nil
}

// deniedError builds the answer AWS gives a caller whose policy does not allow a call: EC2 answers
// UnauthorizedOperation with an encoded authorization message, the other services AccessDenied(Exception).
func deniedError(a *account, service string, c authzCheck, d iampolicy.Decision) *apiError {
	user := fmt.Sprintf("arn:aws:sts::%s:assumed-role/dovetail-controller/awssim", a.number)
	why := "because no identity-based policy allows the " + c.action + " action"
	if d == iampolicy.ExplicitDeny {
		why = "with an explicit deny in an identity-based policy"
	}
	switch service {
	case "ec2":
		decoded, _ := json.Marshal(map[string]any{
			"allowed": false, "explicitDeny": d == iampolicy.ExplicitDeny,
			"context": map[string]any{"principal": map[string]string{"arn": user}, "action": c.action, "resource": c.resource,
				"conditions": flatContext(c.ctx)},
		})
		// Real EC2 encrypts the message (sts:DecodeAuthorizationMessage reads it); awssim encodes it in base64.
		return &apiError{Status: http.StatusForbidden, Code: "UnauthorizedOperation", Sender: true,
			Message: "You are not authorized to perform this operation. User: " + user + " is not authorized to perform: " +
				c.action + " on resource: " + c.resource + " " + why + ". Encoded authorization failure message: " +
				base64.RawURLEncoding.EncodeToString(decoded)}
	case "iam", "sqs":
		return &apiError{Status: http.StatusForbidden, Code: "AccessDenied", QueryCode: "AccessDenied", Sender: true,
			Message: "User: " + user + " is not authorized to perform: " + c.action + " on resource: " + c.resource + " " + why}
	}
	return &apiError{Status: http.StatusForbidden, Code: "AccessDeniedException", Sender: true,
		Message: "User: " + user + " is not authorized to perform: " + c.action + " on resource: " + c.resource + " " + why}
}

func flatContext(ctx map[string][]string) []map[string]string {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []map[string]string
	for _, k := range keys {
		out = append(out, map[string]string{"key": k, "values": strings.Join(ctx[k], ",")})
	}
	return out
}

// tagContext adds prefix+key for every tag (aws:RequestTag/ or aws:ResourceTag/).
func tagContext(ctx map[string][]string, prefix string, tags []Tag) map[string][]string {
	if ctx == nil {
		ctx = map[string][]string{}
	}
	for _, t := range tags {
		ctx[prefix+t.Key] = []string{t.Value}
	}
	return ctx
}

// requestTagContext is the context of a request that sets tags: aws:RequestTag/<key> and aws:TagKeys.
func requestTagContext(tags []Tag) map[string][]string {
	ctx := tagContext(nil, "aws:RequestTag/", tags)
	keys := make([]string, 0, len(tags))
	for _, t := range tags {
		keys = append(keys, t.Key)
	}
	ctx["aws:TagKeys"] = keys
	return ctx
}

func (s *Simulator) ec2ARN(a *account, typ, id string) string {
	if typ == "image" || typ == "snapshot" {
		return fmt.Sprintf("arn:aws:ec2:%s::%s/%s", s.opts.Region, typ, id)
	}
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", s.opts.Region, a.number, typ, id)
}

func merge(ms ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// ec2Checks returns what an EC2 call must be allowed to do. Calls without resource-level permissions are
// checked on "*". Tags set at creation also need ec2:CreateTags with ec2:CreateAction, as on AWS.
func (s *Simulator) ec2Checks(a *account, action string, p params) []authzCheck {
	region := map[string][]string{"aws:RequestedRegion": {s.opts.Region}}
	s.mu.Lock()
	defer s.mu.Unlock()
	resTags := func(typ, id string, tags tagSet) authzCheck {
		return authzCheck{action: "ec2:" + action, resource: s.ec2ARN(a, typ, id),
			ctx: merge(region, tagContext(nil, "aws:ResourceTag/", tags.list()))}
	}
	tagOnCreate := func(typ string, tags []Tag) []authzCheck {
		reqCtx := merge(region, requestTagContext(tags))
		out := []authzCheck{{action: "ec2:" + action, resource: s.ec2ARN(a, typ, "*"), ctx: reqCtx}}
		if len(tags) > 0 {
			out = append(out, authzCheck{action: "ec2:CreateTags", resource: s.ec2ARN(a, typ, "*"),
				ctx: merge(reqCtx, map[string][]string{"ec2:CreateAction": {action}})})
		}
		return out
	}
	specTags := func(typ string) []Tag {
		var out []Tag
		for _, ts := range p.tagSpecs("TagSpecification") {
			if ts.ResourceType == typ {
				out = append(out, ts.Tags...)
			}
		}
		return out
	}
	switch action {
	case "CreateLaunchTemplate":
		return tagOnCreate("launch-template", specTags("launch-template"))
	case "DeleteLaunchTemplate":
		lt := a.templateByID(p.get("LaunchTemplateId"))
		if lt == nil {
			lt = a.templates[p.get("LaunchTemplateName")]
		}
		if lt == nil {
			return []authzCheck{{action: "ec2:" + action, resource: s.ec2ARN(a, "launch-template", "*"), ctx: region}}
		}
		return []authzCheck{resTags("launch-template", lt.ID, lt.Tags)}
	case "TerminateInstances", "RebootInstances":
		var out []authzCheck
		for _, id := range p.strings("InstanceId") {
			var tags tagSet
			if i, ok := a.instances[id]; ok {
				tags = i.Tags
			}
			out = append(out, resTags("instance", id, tags))
		}
		return out
	case "CreateTags", "DeleteTags":
		var out []authzCheck
		req := requestTagContext(p.tags("Tag"))
		for _, id := range p.strings("ResourceId") {
			typ := map[string]string{"i": "instance", "lt": "launch-template", "subnet": "subnet", "sg": "security-group",
				"vol": "volume", "ami": "image"}[strings.SplitN(id, "-", 2)[0]]
			if typ == "" {
				typ = "resource"
			}
			c := resTags(typ, id, a.tagsOf(id))
			c.ctx = merge(c.ctx, req)
			out = append(out, c)
		}
		return out
	case "CreateFleet", "RunInstances":
		out := []authzCheck{{action: "ec2:" + action, resource: s.ec2ARN(a, "fleet", "*"), ctx: region}}
		out = append(out, tagOnCreate("instance", specTags("instance"))...)
		out = append(out, tagOnCreate("volume", specTags("volume"))...)
		seenLT, seenSubnet := map[string]bool{}, map[string]bool{}
		configs := p.list("LaunchTemplateConfigs")
		if action == "RunInstances" {
			// The subnet is named at the top level or by the first network interface.
			subnet := p.get("SubnetId")
			if subnet == "" {
				subnet = p.get("NetworkInterface.1.SubnetId")
			}
			configs = []params{{"LaunchTemplateSpecification.LaunchTemplateId": p.get("LaunchTemplate.LaunchTemplateId"),
				"LaunchTemplateSpecification.LaunchTemplateName": p.get("LaunchTemplate.LaunchTemplateName"),
				"Overrides.1.SubnetId":                           subnet}}
		}
		for _, cfg := range configs {
			spec := cfg.sub("LaunchTemplateSpecification")
			lt := a.templateByID(spec.get("LaunchTemplateId"))
			if lt == nil {
				lt = a.templates[spec.get("LaunchTemplateName")]
			}
			if lt != nil && !seenLT[lt.ID] {
				seenLT[lt.ID] = true
				out = append(out, resTags("launch-template", lt.ID, lt.Tags))
				if img := lt.imageID(); img != "" {
					out = append(out, authzCheck{action: "ec2:" + action, resource: s.ec2ARN(a, "image", img), ctx: region})
				}
			}
			for _, ov := range cfg.list("Overrides") {
				if sn := ov.get("SubnetId"); sn != "" && !seenSubnet[sn] {
					seenSubnet[sn] = true
					out = append(out, authzCheck{action: "ec2:" + action, resource: s.ec2ARN(a, "subnet", sn), ctx: region})
				}
			}
		}
		return out
	}
	return []authzCheck{{action: "ec2:" + action, resource: "*", ctx: region}}
}

// iamChecks returns what an IAM call must be allowed to do.
func (s *Simulator) iamChecks(a *account, action string, p params) []authzCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := p.get("InstanceProfileName")
	if name == "" {
		return []authzCheck{{action: "iam:" + action, resource: "*"}}
	}
	path := "/"
	ctx := map[string][]string{}
	if ip, ok := a.profiles[name]; ok {
		path = ip.Path
		ctx = tagContext(ctx, "aws:ResourceTag/", ip.Tags.list())
	} else if p.get("Path") != "" {
		path = p.get("Path")
	}
	if strings.HasPrefix(action, "Tag") || strings.HasPrefix(action, "Create") {
		ctx = merge(ctx, requestTagContext(p.tags("Tags.member")))
	}
	arn := fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", a.number, path, name)
	out := []authzCheck{{action: "iam:" + action, resource: arn, ctx: ctx}}
	if action == "AddRoleToInstanceProfile" {
		// Putting a role in a profile passes it to EC2.
		rpath := "/"
		if r, ok := a.roles[p.get("RoleName")]; ok {
			rpath = r.Path
		}
		out = append(out, authzCheck{action: "iam:PassRole",
			resource: fmt.Sprintf("arn:aws:iam::%s:role%s%s", a.number, rpath, p.get("RoleName")),
			ctx:      map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
	}
	return out
}

// jsonChecks returns what an SSM, Pricing or SQS call must be allowed to do.
func (s *Simulator) jsonChecks(r *http.Request, a *account, service, action string, body []byte) []authzCheck {
	var in struct {
		Name, QueueName, QueueUrl string
		Names                     []string
	}
	_ = json.Unmarshal(body, &in)
	switch service {
	case "ssm":
		var out []authzCheck
		for _, n := range append([]string{in.Name}, in.Names...) {
			if n != "" {
				out = append(out, authzCheck{action: "ssm:" + action, resource: fmt.Sprintf("arn:aws:ssm:%s::parameter%s", s.opts.Region, n)})
			}
		}
		if len(out) > 0 {
			return out
		}
	case "sqs":
		owner, name := a.number, in.QueueName
		if in.QueueUrl != "" {
			if u, err := url.Parse(in.QueueUrl); err == nil {
				if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) == 2 {
					owner, name = parts[0], parts[1]
				}
			}
		}
		if name != "" {
			return []authzCheck{{action: "sqs:" + action, resource: fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.opts.Region, owner, name)}}
		}
	}
	return []authzCheck{{action: service + ":" + action, resource: "*"}}
}

// policyDigest identifies the enforced policy in logs.
func policyDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:6])
}
