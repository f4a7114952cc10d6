package v1

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Never is the value of a NillableDuration that disables the behaviour it controls.
const Never = "Never"

// NillableDuration is a duration that may also be the string "Never". "Never" decodes to a nil Duration.
// The text the user wrote is kept in Raw so that the object is written back exactly as it was read
// (GitOps tools compare the stored text with their manifests).
type NillableDuration struct {
	// Duration is nil when the value is "Never".
	Duration *time.Duration `json:"-"`
	// Raw is the JSON text that was decoded, replayed by MarshalJSON while it still matches Duration.
	Raw []byte `json:"-"`
}

// MustParseNillableDuration parses "Never" or a Go duration and panics on malformed input; use it for
// constants and tests only.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses "Never" or a Go duration such as "720h" or "1m30s".
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{Raw: []byte(`"` + Never + `"`)}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return NillableDuration{Duration: &d, Raw: []byte(`"` + s + `"`)}, nil
}

// NewNillableDuration returns a NillableDuration holding d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// IsNever reports whether the duration is "Never" (or unset: a nil Duration never expires).
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String returns "Never" or the Go form of the duration.
func (d NillableDuration) String() string {
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// UnmarshalJSON accepts a JSON string holding "Never" or a Go duration.
// JSON null leaves the value unchanged.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"720h\" or \"Never\": %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	parsed.Raw = slices.Clone(b)
	*d = parsed
	return nil
}

// MarshalJSON writes the text that was read if it still describes the same duration, otherwise the Go form.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	var s string
	if len(d.Raw) > 0 && json.Unmarshal(d.Raw, &s) == nil {
		if prev, err := ParseNillableDuration(s); err == nil && equalDurations(prev.Duration, d.Duration) {
			return d.Raw, nil
		}
	}
	return json.Marshal(d.String())
}

// IsZero reports whether the value was never set (no duration and no decoded text). Fields of this type use
// `omitzero`, so a zero value is left out when written and the API server applies the field's default.
// Use NeverDuration for an explicit "Never".
func (d NillableDuration) IsZero() bool { return d.Duration == nil && len(d.Raw) == 0 }

// NeverDuration returns an explicit "Never".
func NeverDuration() NillableDuration { return NillableDuration{Raw: []byte(`"` + Never + `"`)} }

// ToUnstructured lets the unstructured converter produce the same text as MarshalJSON. A zero value becomes
// nil, which the API server drops before applying the field's default.
func (d NillableDuration) ToUnstructured() interface{} {
	if d.IsZero() {
		return nil
	}
	b, err := d.MarshalJSON()
	if err != nil {
		return d.String()
	}
	var s string
	if json.Unmarshal(b, &s) != nil {
		return d.String()
	}
	return s
}

func equalDurations(a, b *time.Duration) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
