package simulate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSimulateNodeOverlays: the --nodepools file carries NodeOverlays. The device exists only through the
// m5-device overlay, so the pod lands on m5.large; zz-same-weight (weight 10, applied first) and m5-discount
// (weight 10) both price m5.large, so m5-discount conflicts and is left out, and the node costs $5/h.
func TestSimulateNodeOverlays(t *testing.T) {
	out, err := run(t, &Options{PodsFile: "testdata/overlay-pods.yaml", NodePoolsFile: "testdata/overlay-nodepools.yaml",
		Region: "us-west-2", Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(r.NewNodes) != 1 || r.NewNodes[0].InstanceType != "m5.large" || r.NewNodes[0].HourlyCost != 5 {
		t.Errorf("new nodes: %+v, want one m5.large at $5/h", r.NewNodes)
	}
	var left []string
	for _, o := range r.NodeOverlays {
		left = append(left, o.NodeOverlay+"/"+o.Reason)
	}
	if diff := cmp.Diff([]string{"m5-discount/Conflict"}, left); diff != "" {
		t.Errorf("overlays not applied (-want +got):\n%s", diff)
	}
	table, err := run(t, &Options{PodsFile: "testdata/overlay-pods.yaml", NodePoolsFile: "testdata/overlay-nodepools.yaml",
		Region: "us-west-2", Output: "table"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "m5-discount: Conflict: overlay zz-same-weight, of the same weight 10, already sets the price of m5.") {
		t.Errorf("table output lacks the conflict:\n%s", table)
	}
}
