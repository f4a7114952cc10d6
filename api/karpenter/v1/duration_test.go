package v1_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func TestNillableDurationJSON(t *testing.T) {
	cases := []struct {
		in       string
		never    bool
		duration time.Duration
		out      string
	}{
		{in: `"Never"`, never: true, out: `"Never"`},
		{in: `"720h"`, duration: 720 * time.Hour, out: `"720h"`},
		{in: `"1m30s"`, duration: 90 * time.Second, out: `"1m30s"`},
		{in: `"0s"`, duration: 0, out: `"0s"`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var d karpv1.NillableDuration
			if err := json.Unmarshal([]byte(tc.in), &d); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if d.IsNever() != tc.never {
				t.Fatalf("IsNever() = %v, want %v", d.IsNever(), tc.never)
			}
			if !tc.never && *d.Duration != tc.duration {
				t.Errorf("Duration = %v, want %v", *d.Duration, tc.duration)
			}
			out, err := json.Marshal(d)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(out) != tc.out {
				t.Errorf("Marshal = %s, want %s", out, tc.out)
			}
		})
	}
}

func TestNillableDurationRejectsBadInput(t *testing.T) {
	var null karpv1.NillableDuration
	if err := json.Unmarshal([]byte(`null`), &null); err != nil || !null.IsZero() {
		t.Errorf("Unmarshal(null) = %+v, %v; want a zero value and no error", null, err)
	}
	for _, in := range []string{`"30d"`, `"never"`, `5`, `""`} {
		var d karpv1.NillableDuration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, d)
		}
	}
}

func TestNillableDurationChangedValueDropsRaw(t *testing.T) {
	var d karpv1.NillableDuration
	if err := json.Unmarshal([]byte(`"60m"`), &d); err != nil {
		t.Fatal(err)
	}
	two := 2 * time.Hour
	d.Duration = &two
	out, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `"2h0m0s"` {
		t.Errorf("Marshal after change = %s, want \"2h0m0s\"", out)
	}
}

func TestNillableDurationZeroIsOmitted(t *testing.T) {
	spec := karpv1.NodeClaimTemplateSpec{}
	out, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]interface{}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["expireAfter"]; ok {
		t.Errorf("zero expireAfter was written (%s); it must be left to the API server default", out)
	}
	spec.ExpireAfter = karpv1.NeverDuration()
	out, _ = json.Marshal(spec)
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if m["expireAfter"] != karpv1.Never {
		t.Errorf("explicit Never written as %v", m["expireAfter"])
	}
}

func TestNillableDurationUnstructured(t *testing.T) {
	in := karpv1.NodeClaimTemplateSpec{ExpireAfter: karpv1.MustParseNillableDuration("24h")}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&in)
	if err != nil {
		t.Fatalf("ToUnstructured: %v", err)
	}
	if u["expireAfter"] != "24h" {
		t.Errorf("unstructured expireAfter = %#v, want \"24h\"", u["expireAfter"])
	}
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&karpv1.NodeClaimTemplateSpec{}); err != nil || u["expireAfter"] != nil {
		t.Errorf("zero expireAfter converted to %#v (err %v), want nil", u["expireAfter"], err)
	}
	var out karpv1.NodeClaimTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]interface{}{"expireAfter": "Never"}, &out); err != nil {
		t.Fatalf("FromUnstructured: %v", err)
	}
	if !out.ExpireAfter.IsNever() || out.ExpireAfter.IsZero() {
		t.Errorf("FromUnstructured Never = %+v", out.ExpireAfter)
	}
}
