package awssim

import "sort"

// Tag is an AWS resource tag.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// tagSet is a mutable set of tags kept as a map; output is sorted by key.
type tagSet map[string]string

func newTagSet(tags ...[]Tag) tagSet {
	s := tagSet{}
	for _, ts := range tags {
		for _, t := range ts {
			s[t.Key] = t.Value
		}
	}
	return s
}

func (s tagSet) list() []Tag {
	out := make([]Tag, 0, len(s))
	for k, v := range s {
		out = append(out, Tag{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func (s tagSet) clone() tagSet {
	c := make(tagSet, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

func tagSetXML(name string, s tagSet) *el {
	var items []*el
	for _, t := range s.list() {
		items = append(items, E("item", T("key", t.Key), T("value", t.Value)))
	}
	return List(name, "item", items)
}
