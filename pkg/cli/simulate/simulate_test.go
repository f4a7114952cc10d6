package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func run(t *testing.T, o *Options) (string, error) {
	t.Helper()
	var buf bytes.Buffer
	err := Run(context.Background(), o, &buf)
	return buf.String(), err
}

func TestSimulateTable(t *testing.T) {
	out, err := run(t, &Options{PodsFile: "testdata/workload.yaml", NodePoolsFile: "testdata/nodepools.yaml",
		InstanceTypesFile: "testdata/types.json", Output: "table"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NEW NODES", "m5.", "Hourly cost:", "LP lower bound:", "Unschedulable:      1 pods",
		"default/huge: nodepool general: requests 96 cpu; largest instance type allowed by NodePool general has 7810m",
		"Scheduling step:", "for 11 pods"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateJSON(t *testing.T) {
	out, err := run(t, &Options{PodsFile: "testdata/workload.yaml", NodePoolsFile: "testdata/nodepools.yaml",
		InstanceTypesFile: "testdata/types.json", Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	placed := 0
	zones := map[string]int{}
	for _, nc := range r.NodeClaims {
		placed += len(nc.Pods)
		for _, p := range nc.Pods {
			if strings.HasPrefix(p, "shop/web-") {
				zones[nc.Zone]++
			}
		}
		if nc.Zone == "us-west-2c" && nc.InstanceType == "m5.2xlarge" {
			t.Errorf("planned an unavailable offering: %+v", nc)
		}
	}
	if d := cmp.Diff([]int{11, 10, 1}, []int{r.Pods, placed, len(r.Unschedulable)}); d != "" {
		t.Errorf("pods, placed, unschedulable (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]int{"us-west-2a": 2, "us-west-2b": 2, "us-west-2c": 2}, zones); d != "" {
		t.Errorf("web pods per zone (-want +got):\n%s", d)
	}
	if r.HourlyCost <= 0 || r.LowerBound <= 0 || r.Ratio < 1 {
		t.Errorf("cost %v bound %v ratio %v", r.HourlyCost, r.LowerBound, r.Ratio)
	}
}

func TestSimulateCatalog(t *testing.T) {
	out, err := run(t, &Options{PodsFile: "testdata/workload.yaml", NodePoolsFile: "testdata/nodepools.yaml", Region: "us-west-2", Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	// the catalog has instance types large enough for the 96-cpu pod
	if len(r.NodeClaims) == 0 || len(r.Unschedulable) != 0 {
		t.Fatalf("want every pod placed, got %d nodes, unschedulable %v", len(r.NodeClaims), r.Unschedulable)
	}
	if _, err := run(t, &Options{PodsFile: "testdata/workload.yaml", NodePoolsFile: "testdata/nodepools.yaml", Region: "mars-1", Output: "table"}); err == nil ||
		!strings.Contains(err.Error(), `region "mars-1"`) {
		t.Errorf("unknown region: err = %v", err)
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pods := write("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n")
	pools := "testdata/nodepools.yaml"
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"misspelled field", Options{PodsFile: write("typo.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x, resorces: {}}]}\n"), NodePoolsFile: pools},
			`typo.yaml: document 1: unknown field "spec.containers[0].resorces"`},
		{"bad quantity", Options{PodsFile: write("qty.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n"), NodePoolsFile: pools},
			"qty.yaml: document 1:"},
		{"unsupported kind", Options{PodsFile: write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n"), NodePoolsFile: pools},
			`svc.yaml: document 1: unsupported kind "Service"`},
		{"missing kind in a JSON array", Options{PodsFile: write("arr.json", `[{"apiVersion":"v1","metadata":{"name":"a"}}]`), NodePoolsFile: pools},
			"arr.json: [0]: missing kind"},
		{"no nodepool", Options{PodsFile: pods, NodePoolsFile: pods}, "pods.yaml: no NodePool found"},
		{"bad operator", Options{PodsFile: pods, NodePoolsFile: write("np.yaml", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: {spec: {nodeClassRef: {group: g, kind: k, name: default}, requirements: [{key: a, operator: Near, values: [b]}]}}}\n")},
			`np.yaml: document 1: NodePool x: spec.template.spec.requirements[0].operator: unknown operator "Near"`},
		{"instance type without capacity type", Options{PodsFile: pods, NodePoolsFile: pools, InstanceTypesFile: write("t.json",
			`[{"name":"x","capacity":{"cpu":"2","memory":"4Gi"},"offerings":[{"zone":"a","price":0.1}]}]`)},
			`t.json: [0] (x): offerings[0].capacityType: "" is not one of on-demand, spot, reserved`},
		{"instance type bad quantity", Options{PodsFile: pods, NodePoolsFile: pools, InstanceTypesFile: write("q.json",
			`[{"name":"x","capacity":{"cpu":"two","memory":"4Gi"},"offerings":[{"zone":"a","capacityType":"spot","price":0.1}]}]`)},
			`q.json: [0] (x): capacity.cpu: "two" is not a quantity`},
		{"instance types not an array", Options{PodsFile: pods, NodePoolsFile: pools, InstanceTypesFile: write("o.json", `{"name":"x"}`)},
			"o.json: want a JSON array of instance types"},
		{"missing file", Options{PodsFile: filepath.Join(dir, "nope.yaml"), NodePoolsFile: pools}, "nope.yaml"},
		{"no pods flag", Options{NodePoolsFile: pools}, "--pods is required"},
		{"bad output", Options{PodsFile: pods, NodePoolsFile: pools, Output: "xml"}, `--output: "xml" is not one of table, json`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.o.Output == "" {
				c.o.Output = "table"
			}
			_, err := run(t, &c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestDocumentsForms(t *testing.T) {
	list := `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}},{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"x"}]}}]}`
	array := `[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"x"}]}}]`
	multi := "kind: Pod\napiVersion: v1\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n---\n# comment only\n---\nkind: Pod\napiVersion: v1\nmetadata: {name: b}\nspec: {containers: [{name: c, image: x}]}\n"
	for name, c := range map[string]struct {
		in   string
		want int
	}{"list": {list, 2}, "array": {array, 1}, "multi-document": {multi, 2}} {
		t.Run(name, func(t *testing.T) {
			docs, err := documents([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			o := &objects{}
			for _, d := range docs {
				if err := o.add(d); err != nil {
					t.Fatal(err)
				}
			}
			if len(o.pods) != c.want {
				t.Errorf("pods = %d, want %d", len(o.pods), c.want)
			}
		})
	}
}

// TestSimulateGteLte plans with a NodePool bounding karpenter.k8s.aws/instance-cpu to exactly 8 with Gte and Lte:
// every planned node is a 2xlarge (8 vCPUs) of the built-in catalog although a smaller type would be cheaper.
func TestSimulateGteLte(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pods := write("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 512Mi}}}]}\n")
	pools := write("np.yaml", `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: bounded}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["8"]}
        - {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["8"]}
`)
	out, err := run(t, &Options{PodsFile: pods, NodePoolsFile: pools, Region: "us-west-2", Output: "json"})
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(r.NodeClaims) != 1 {
		t.Fatalf("want one planned node, got %+v", r.NodeClaims)
	}
	if it := r.NodeClaims[0].InstanceType; !strings.HasSuffix(it, ".2xlarge") {
		t.Errorf("planned %s, want an 8-vCPU .2xlarge type", it)
	}
}
