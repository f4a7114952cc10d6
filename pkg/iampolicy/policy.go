package iampolicy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Effect is a statement's effect.
type Effect string

// Effects.
const (
	Allow Effect = "Allow"
	Deny  Effect = "Deny"
)

// Policy is a parsed identity policy.
type Policy struct {
	Statements []Statement
}

// Statement is one policy statement.
type Statement struct {
	Sid        string
	Effect     Effect
	Actions    []string
	Resources  []string
	Conditions []Condition
}

// Condition is one operator applied to one context key, e.g. StringEquals aws:ResourceTag/k: [v].
type Condition struct {
	// Operator is the base operator without qualifier or IfExists, e.g. StringLike.
	Operator string
	// Qualifier is "", "ForAllValues" or "ForAnyValue".
	Qualifier string
	// IfExists makes the condition true when the key is absent.
	IfExists bool
	Key      string
	Values   []string
}

// Decision is the outcome of evaluating a request.
type Decision int

// Decisions.
const (
	// ImplicitDeny: no statement allows the request.
	ImplicitDeny Decision = iota
	// Allowed: a statement allows the request and none denies it.
	Allowed
	// ExplicitDeny: a Deny statement matches the request.
	ExplicitDeny
)

func (d Decision) String() string {
	return [...]string{"ImplicitDeny", "Allowed", "ExplicitDeny"}[d]
}

// Request is what is authorized: one action on one resource, with the request context (condition keys such
// as aws:RequestTag/Name, aws:ResourceTag/Name, aws:TagKeys, ec2:CreateAction). Context keys are matched
// case-insensitively; a multi-valued key (aws:TagKeys) has several values.
type Request struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// rawPolicy is the JSON form; Action, Resource and condition values are a string or a list of strings.
type rawPolicy struct {
	Version   string          `json:"Version"`
	Statement json.RawMessage `json:"Statement"`
}

type rawStatement struct {
	Sid       string                           `json:"Sid"`
	Effect    string                           `json:"Effect"`
	Action    stringList                       `json:"Action"`
	Resource  stringList                       `json:"Resource"`
	Condition map[string]map[string]stringList `json:"Condition"`
}

type stringList []string

func (s *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings, got %s", b)
	}
	*s = many
	return nil
}

var knownStatementKeys = map[string]bool{"Sid": true, "Effect": true, "Action": true, "Resource": true, "Condition": true}

var knownOperators = map[string]bool{
	"StringEquals": true, "StringNotEquals": true, "StringLike": true, "StringNotLike": true,
	"StringEqualsIgnoreCase": true, "StringNotEqualsIgnoreCase": true, "Null": true,
}

// Parse parses a policy document. Elements the evaluator does not implement (NotAction, NotResource,
// Principal, numeric or date operators) are errors rather than being ignored.
func Parse(b []byte) (*Policy, error) {
	var raw rawPolicy
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parsing policy: %w", err)
	}
	if raw.Version != "2012-10-17" {
		return nil, fmt.Errorf("policy Version %q: want 2012-10-17", raw.Version)
	}
	var rawStmts []json.RawMessage
	if err := json.Unmarshal(raw.Statement, &rawStmts); err != nil {
		var one json.RawMessage
		if err2 := json.Unmarshal(raw.Statement, &one); err2 != nil || len(one) == 0 || one[0] != '{' {
			return nil, fmt.Errorf("policy Statement: want an object or a list of objects")
		}
		rawStmts = []json.RawMessage{one}
	}
	p := &Policy{}
	for i, rs := range rawStmts {
		st, err := parseStatement(rs)
		if err != nil {
			return nil, fmt.Errorf("statement %d: %w", i, err)
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// ParseFile reads and parses a policy file.
func ParseFile(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading policy: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func parseStatement(b []byte) (Statement, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return Statement{}, err
	}
	for k := range keys {
		if !knownStatementKeys[k] {
			return Statement{}, fmt.Errorf("unsupported element %q", k)
		}
	}
	var rs rawStatement
	if err := json.Unmarshal(b, &rs); err != nil {
		return Statement{}, err
	}
	st := Statement{Sid: rs.Sid, Effect: Effect(rs.Effect), Actions: rs.Action, Resources: rs.Resource}
	if st.Effect != Allow && st.Effect != Deny {
		return Statement{}, fmt.Errorf("Effect %q: want Allow or Deny", rs.Effect)
	}
	if len(st.Actions) == 0 {
		return Statement{}, fmt.Errorf("no Action")
	}
	for _, a := range st.Actions {
		if a != "*" && !strings.Contains(a, ":") {
			return Statement{}, fmt.Errorf("Action %q: want service:Action", a)
		}
	}
	if len(st.Resources) == 0 {
		return Statement{}, fmt.Errorf("no Resource")
	}
	ops := make([]string, 0, len(rs.Condition))
	for op := range rs.Condition {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, full := range ops {
		c := Condition{}
		op := full
		if q, rest, ok := strings.Cut(op, ":"); ok {
			if q != "ForAllValues" && q != "ForAnyValue" {
				return Statement{}, fmt.Errorf("condition operator %q: unknown qualifier %q", full, q)
			}
			c.Qualifier, op = q, rest
		}
		if base, ok := strings.CutSuffix(op, "IfExists"); ok {
			c.IfExists, op = true, base
		}
		if !knownOperators[op] {
			return Statement{}, fmt.Errorf("condition operator %q is not supported", full)
		}
		c.Operator = op
		keys := make([]string, 0, len(rs.Condition[full]))
		for k := range rs.Condition[full] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cc := c
			cc.Key, cc.Values = k, rs.Condition[full][k]
			st.Conditions = append(st.Conditions, cc)
		}
	}
	return st, nil
}

// Evaluate decides a request: an explicit Deny wins, then any Allow, else the request is implicitly denied.
func (p *Policy) Evaluate(r Request) Decision {
	ctx := make(map[string][]string, len(r.Context))
	for k, v := range r.Context {
		ctx[strings.ToLower(k)] = v
	}
	d := ImplicitDeny
	for _, st := range p.Statements {
		if !st.matches(r.Action, r.Resource, ctx) {
			continue
		}
		if st.Effect == Deny {
			return ExplicitDeny
		}
		d = Allowed
	}
	return d
}

func (st Statement) matches(action, resource string, ctx map[string][]string) bool {
	ok := false
	for _, a := range st.Actions {
		if wildcardMatch(strings.ToLower(a), strings.ToLower(action)) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	ok = false
	for _, res := range st.Resources {
		if wildcardMatch(res, resource) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	for _, c := range st.Conditions {
		if !c.holds(ctx) {
			return false
		}
	}
	return true
}

func (c Condition) holds(ctx map[string][]string) bool {
	vals, present := ctx[strings.ToLower(c.Key)]
	if c.Operator == "Null" {
		// Null: "true" holds when the key is absent, "false" when it is present.
		for _, want := range c.Values {
			if (want == "true") == !present {
				return true
			}
		}
		return false
	}
	if !present && c.IfExists {
		return true
	}
	negated := strings.Contains(c.Operator, "Not")
	switch c.Qualifier {
	case "ForAllValues":
		// Every value of the key must match; an absent or empty key holds vacuously.
		for _, v := range vals {
			if !c.matchOne(v) {
				return false
			}
		}
		return true
	case "ForAnyValue":
		for _, v := range vals {
			if c.matchOne(v) {
				return true
			}
		}
		return false
	}
	if !present {
		// A negated operator holds on a missing key; a positive one does not.
		return negated
	}
	// A single-valued key: the (first) value must match.
	return c.matchOne(vals[0])
}

// matchOne applies the operator to one context value against the condition's values.
func (c Condition) matchOne(v string) bool {
	hit := false
	for _, want := range c.Values {
		switch c.Operator {
		case "StringEquals", "StringNotEquals":
			hit = hit || v == want
		case "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase":
			hit = hit || strings.EqualFold(v, want)
		case "StringLike", "StringNotLike":
			hit = hit || wildcardMatch(want, v)
		}
	}
	if strings.Contains(c.Operator, "Not") {
		return !hit
	}
	return hit
}

// wildcardMatch matches s against a pattern where * is any run of characters and ? one character.
func wildcardMatch(pattern, s string) bool {
	// Iterative glob matching with backtracking on the last star.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

var placeholderRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// Render replaces ${NAME} placeholders in a policy template with vars; a placeholder without a value is an
// error naming it.
func Render(template []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := placeholderRE.ReplaceAllFunc(template, func(m []byte) []byte {
		name := string(placeholderRE.FindSubmatch(m)[1])
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("policy template placeholders without a value: %s", strings.Join(slices.Compact(missing), ", "))
	}
	return out, nil
}
