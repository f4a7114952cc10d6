package awssim

import "strings"

// valuesFunc returns the values a resource has for a filter name; known=false for filters the resource type
// does not support.
type valuesFunc func(name string) (vals []string, known bool)

// matchFilters applies EC2 filter semantics: every filter must match (AND), a filter matches when any of the
// resource's values matches any filter value (OR); values may use the * and ? wildcards. Tag filters
// (tag:<key>, tag-key, tag-value) are handled here for every resource type.
func matchFilters(fs []filter, values valuesFunc, tags tagSet) (bool, *apiError) {
	for _, f := range fs {
		var have []string
		switch {
		case strings.HasPrefix(f.Name, "tag:"):
			v, ok := tags[strings.TrimPrefix(f.Name, "tag:")]
			if !ok {
				return false, nil
			}
			have = []string{v}
		case f.Name == "tag-key":
			for k := range tags {
				have = append(have, k)
			}
		case f.Name == "tag-value":
			for _, v := range tags {
				have = append(have, v)
			}
		default:
			v, known := values(f.Name)
			if !known {
				return false, errBadRequest("InvalidParameterValue", "The filter '%s' is invalid", f.Name)
			}
			have = v
		}
		if !anyMatch(f.Values, have) {
			return false, nil
		}
	}
	return true, nil
}

// validateFilters checks filter names without a resource, so an empty result set still rejects bad filters.
func validateFilters(fs []filter, values valuesFunc) *apiError {
	for _, f := range fs {
		if strings.HasPrefix(f.Name, "tag:") || f.Name == "tag-key" || f.Name == "tag-value" {
			continue
		}
		if f.Name == "" {
			return errBadRequest("InvalidParameterValue", "a filter has no name")
		}
		if _, known := values(f.Name); !known {
			return errBadRequest("InvalidParameterValue", "The filter '%s' is invalid", f.Name)
		}
	}
	return nil
}

func anyMatch(patterns, have []string) bool {
	for _, p := range patterns {
		for _, h := range have {
			if globMatch(p, h) {
				return true
			}
		}
	}
	return false
}

// globMatch matches s against p where * is any run of characters and ? any single character.
func globMatch(p, s string) bool {
	if !strings.ContainsAny(p, "*?") {
		return p == s
	}
	pr, sr := []rune(p), []rune(s)
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(sr) {
		switch {
		case pi < len(pr) && (pr[pi] == '?' || pr[pi] == sr[si]):
			pi++
			si++
		case pi < len(pr) && pr[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(pr) && pr[pi] == '*' {
		pi++
	}
	return pi == len(pr)
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
