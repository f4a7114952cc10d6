package hashversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRestamp(t *testing.T) {
	current := Stamp{Hash: "555", Version: "dovetail-v1"}
	cases := []struct {
		name        string
		claim       Stamp
		owner       Stamp
		want        Stamp
		wantDrifted bool
	}{
		{"already current", Stamp{"111", "dovetail-v1"}, Stamp{"999", "v3"}, Stamp{"111", "dovetail-v1"}, false},
		{"karpenter, template unchanged", Stamp{"123", "v3"}, Stamp{"123", "v3"}, current, false},
		{"karpenter, template changed before the takeover", Stamp{"123", "v3"}, Stamp{"456", "v3"}, Stamp{"v3/123", "dovetail-v1"}, true},
		{"owner already moved", Stamp{"123", "v3"}, Stamp{"555", "dovetail-v1"}, current, false},
		{"owner never stamped", Stamp{"123", "v3"}, Stamp{}, current, false},
		{"claim never stamped", Stamp{}, Stamp{"123", "v3"}, current, false},
		{"older karpenter scheme on the claim", Stamp{"123", "v2"}, Stamp{"456", "v3"}, current, false},
		{"dovetail's own older scheme", Stamp{"1", "v1"}, Stamp{"2", "v1"}, Stamp{"v1/1", "dovetail-v1"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, drifted := Restamp(tc.claim, tc.owner, current)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("stamp (-want +got):\n%s", d)
			}
			if drifted != tc.wantDrifted {
				t.Errorf("drifted = %v, want %v", drifted, tc.wantDrifted)
			}
			if drifted && got.Hash == current.Hash {
				t.Errorf("a drifted stamp must not equal the current hash")
			}
		})
	}
}
