package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// karpenterList is the committed list of every metric Karpenter v1.14 and v1.15 register, with type and label
// names, which the Karpenter metrics oracle (test/karpenter/metrics, make test) checks against Karpenter's own
// packages.
var karpenterList = filepath.FromSlash("../../test/karpenter/metrics/testdata/karpenter-metrics.json")

type karpenterMetric struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Labels   []string `json:"labels"`
	Versions []string `json:"versions"`
}

// TestCatalogAgreesWithKarpenter: every metric the catalog calls the same as Karpenter's is one of Karpenter's with
// its type and label names (those of one of its versions: v1.15 added labels), and every karpenter_ metric Dovetail
// registers that Karpenter does not have says how it differs. The Karpenter metrics Dovetail does not register are
// logged.
func TestCatalogAgreesWithKarpenter(t *testing.T) {
	data, err := os.ReadFile(karpenterList)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Metrics []karpenterMetric `json:"metrics"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", karpenterList, err)
	}
	theirs := map[string][]karpenterMetric{}
	for _, m := range list.Metrics {
		theirs[m.Name] = append(theirs[m.Name], m)
	}
	ours, err := Describe(NewForTest())
	if err != nil {
		t.Fatal(err)
	}
	infos := map[string]Info{}
	for _, i := range Catalog() {
		infos[i.Name] = i
	}
	registered := map[string]bool{}
	for _, d := range ours {
		registered[d.Name] = true
		info := infos[d.Name]
		versions, ok := theirs[d.Name]
		if !ok {
			if info.Karpenter == "" && strings.HasPrefix(d.Name, "karpenter_") {
				t.Errorf("%s: the catalog says same as Karpenter, but Karpenter v1.14 and v1.15 have no such metric", d.Name)
			}
			continue
		}
		if info.Karpenter != "" {
			continue
		}
		labels := slices.Sorted(slices.Values(d.Labels))
		if !slices.ContainsFunc(versions, func(k karpenterMetric) bool {
			return k.Type == info.Type && slices.Equal(slices.Sorted(slices.Values(k.Labels)), labels)
		}) {
			t.Errorf("%s: Dovetail %s %v, Karpenter %+v", d.Name, info.Type, labels, versions)
		}
	}
	var missing []string
	for name := range theirs {
		if (strings.HasPrefix(name, "karpenter_") || strings.HasPrefix(name, "operator_")) && !registered[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	t.Logf("%d Karpenter metrics not registered by the metrics package:\n%s", len(missing), strings.Join(missing, "\n"))
}
