package awssim

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// params is a flattened query-protocol request (EC2 or IAM form) with helpers to read nested lists.
type params map[string]string

func newParams(form url.Values) params {
	p := params{}
	for k, v := range form {
		if len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p
}

func (p params) get(key string) string { return p[key] }

func (p params) has(key string) bool { _, ok := p[key]; return ok }

// sub returns the keys under prefix ("A.B" → keys "A.B.x" become "x").
func (p params) sub(prefix string) params {
	out := params{}
	pre := prefix + "."
	for k, v := range p {
		if strings.HasPrefix(k, pre) {
			out[k[len(pre):]] = v
		}
	}
	return out
}

// list returns the numbered members under prefix (prefix.1.x, prefix.2.x …) ordered by index.
func (p params) list(prefix string) []params {
	s := p.sub(prefix)
	groups := map[int]params{}
	for k, v := range s {
		head, rest, _ := strings.Cut(k, ".")
		n, err := strconv.Atoi(head)
		if err != nil {
			continue
		}
		if groups[n] == nil {
			groups[n] = params{}
		}
		groups[n][rest] = v
	}
	idx := make([]int, 0, len(groups))
	for n := range groups {
		idx = append(idx, n)
	}
	sort.Ints(idx)
	out := make([]params, 0, len(idx))
	for _, n := range idx {
		out = append(out, groups[n])
	}
	return out
}

// strings returns the scalar numbered members prefix.1, prefix.2 … ordered by index.
func (p params) strings(prefix string) []string {
	var out []string
	for _, g := range p.list(prefix) {
		if v, ok := g[""]; ok {
			out = append(out, v)
		}
	}
	return out
}

// intOr returns key parsed as int, def when absent; ok=false when present but not a number.
func (p params) intOr(key string, def int) (int, bool) {
	v, present := p[key]
	if !present || v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return n, true
}

// filter is one EC2 filter: a name and its accepted values.
type filter struct {
	Name   string
	Values []string
}

func (p params) filters() []filter {
	var out []filter
	for _, f := range p.list("Filter") {
		out = append(out, filter{Name: f[""+"Name"], Values: params(f).strings("Value")})
	}
	return out
}

// tagSpec is one TagSpecification: resource type and tags.
type tagSpec struct {
	ResourceType string
	Tags         []Tag
}

func (p params) tags(prefix string) []Tag {
	var out []Tag
	for _, t := range p.list(prefix) {
		out = append(out, Tag{Key: t["Key"], Value: t["Value"]})
	}
	return out
}

func (p params) tagSpecs(prefix string) []tagSpec {
	var out []tagSpec
	for _, s := range p.list(prefix) {
		out = append(out, tagSpec{ResourceType: s["ResourceType"], Tags: params(s).tags("Tag")})
	}
	return out
}
