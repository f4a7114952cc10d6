package overlay_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/overlay"
)

const family = "karpenter.k8s.aws/instance-family"

func types() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "m5.large", CPU: "2", Memory: "8Gi", Price: 0.096, Labels: map[string]string{family: "m5"}}),
		fake.NewInstanceType(fake.InstanceTypeOptions{Name: "c5.large", CPU: "2", Memory: "4Gi", Price: 0.085, Labels: map[string]string{family: "c5"}}),
	}
}

func pool(name string, labels map[string]string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Labels = labels
	return np
}

type ov struct {
	name     string
	weight   int32
	reqs     []karpv1alpha1.NodeSelectorRequirement
	price    string
	adjust   string
	capacity corev1.ResourceList
}

func (o ov) build() karpv1alpha1.NodeOverlay {
	n := karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: o.name}}
	n.Spec.Requirements = o.reqs
	if o.weight != 0 {
		n.Spec.Weight = ptr.To(o.weight)
	}
	if o.price != "" {
		n.Spec.Price = ptr.To(o.price)
	}
	if o.adjust != "" {
		n.Spec.PriceAdjustment = ptr.To(o.adjust)
	}
	n.Spec.Capacity = o.capacity
	return n
}

func in(key string, values ...string) karpv1alpha1.NodeSelectorRequirement {
	return karpv1alpha1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func build(os ...ov) []karpv1alpha1.NodeOverlay {
	var out []karpv1alpha1.NodeOverlay
	for _, o := range os {
		out = append(out, o.build())
	}
	return out
}

func TestAdjustPrice(t *testing.T) {
	cases := []struct {
		price float64
		expr  string
		want  float64
		err   bool
	}{
		{1, "", 1, false},
		{1, "0.5", 0.5, false},
		{1, "2", 2, false},
		{1, "+0.1", 1.1, false},
		{1, "-0.1", 0.9, false},
		{1, "-5", 0, false},
		{2, "+10%", 2.2, false},
		{2, "-10%", 1.8, false},
		{2, "-100%", 0, false},
		{2, "+.5", 2.5, false},
		{2, "10%", 0, true},
		{2, "cheap", 0, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v %s", c.price, c.expr), func(t *testing.T) {
			got, err := overlay.AdjustPrice(c.price, c.expr)
			if (err != nil) != c.err {
				t.Fatalf("error %v, want error %v", err, c.err)
			}
			if math.Abs(got-c.want) > 1e-9 {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// summary is, per instance type, the on-demand price in test-zone-a with the overlay that set it, the spot price
// in test-zone-a, and the example.com/device capacity with its overlay.
type summary struct {
	OnDemand, Spot         float64
	PriceBy, Device, DevBy string
}

func summarize(its []*cloudprovider.InstanceType) map[string]summary {
	out := map[string]summary{}
	for _, it := range its {
		s := summary{}
		for _, o := range it.Offerings {
			if o.Zone != "test-zone-a" {
				continue
			}
			if o.CapacityType == karpv1.CapacityTypeOnDemand {
				s.OnDemand, s.PriceBy = math.Round(o.Price*1e6)/1e6, o.PriceOverlay
			} else {
				s.Spot = math.Round(o.Price*1e6) / 1e6
			}
		}
		if q, ok := it.Capacity["example.com/device"]; ok {
			s.Device, s.DevBy = q.String(), it.CapacityOverlays["example.com/device"]
		}
		out[it.Name] = s
	}
	return out
}

func TestEvaluateAndApply(t *testing.T) {
	dev := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"example.com/device": resource.MustParse(n)}
	}
	base := map[string]summary{
		"m5.large": {OnDemand: 0.096, Spot: 0.0288},
		"c5.large": {OnDemand: 0.085, Spot: 0.0255},
	}
	with := func(changes map[string]func(*summary)) map[string]summary {
		out := map[string]summary{}
		for k, v := range base {
			if f := changes[k]; f != nil {
				f(&v)
			}
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name     string
		overlays []ov
		np       *karpv1.NodePool
		want     map[string]summary
		verdicts map[string]string // overlay -> reason ("" applied)
	}{
		{name: "no overlays", want: base, verdicts: map[string]string{}},
		{name: "price by family", overlays: []ov{{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "m5")}, price: "0.01"}},
			want:     with(map[string]func(*summary){"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.01, 0.01, "a" }}),
			verdicts: map[string]string{"a": ""}},
		{name: "percent on spot only", overlays: []ov{{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in(karpv1.CapacityTypeLabelKey, "spot")}, adjust: "-50%"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.Spot = 0.0144 },
				"c5.large": func(s *summary) { s.Spot = 0.01275 },
			}), verdicts: map[string]string{"a": ""}},
		{name: "absolute adjustment, empty requirements select all", overlays: []ov{{name: "a", adjust: "+0.1"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.196, 0.1288, "a" },
				"c5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.185, 0.1255, "a" },
			}), verdicts: map[string]string{"a": ""}},
		{name: "higher weight price wins", overlays: []ov{
			{name: "low", weight: 1, adjust: "+1"},
			{name: "high", weight: 10, reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, price: "0.5"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 1.096, 1.0288, "low" },
				"c5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.5, 0.5, "high" },
			}), verdicts: map[string]string{"low": "", "high": ""}},
		{name: "equal weight prices on one offering conflict", overlays: []ov{
			{name: "a", weight: 5, reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "m5")}, price: "1"},
			{name: "b", weight: 5, adjust: "-10%"}},
			// b (later name) is applied first; a then conflicts on m5.large and is applied nowhere.
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.0864, 0.02592, "b" },
				"c5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0.0765, 0.02295, "b" },
			}), verdicts: map[string]string{"a": karpv1alpha1.ReasonConflict, "b": ""}},
		{name: "equal weight prices on different types do not conflict", overlays: []ov{
			{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "m5")}, price: "1"},
			{name: "b", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, price: "2"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 1, 1, "a" },
				"c5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 2, 2, "b" },
			}), verdicts: map[string]string{"a": "", "b": ""}},
		{name: "capacity added", overlays: []ov{{name: "d", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, capacity: dev("1")}},
			want:     with(map[string]func(*summary){"c5.large": func(s *summary) { s.Device, s.DevBy = "1", "d" }}),
			verdicts: map[string]string{"d": ""}},
		{name: "capacity higher weight wins", overlays: []ov{
			{name: "low", weight: 1, capacity: dev("1")},
			{name: "high", weight: 2, reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, capacity: dev("4")}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.Device, s.DevBy = "1", "low" },
				"c5.large": func(s *summary) { s.Device, s.DevBy = "4", "high" },
			}), verdicts: map[string]string{"low": "", "high": ""}},
		{name: "equal weight capacity on one resource conflicts", overlays: []ov{
			{name: "a", capacity: dev("1")},
			{name: "b", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, capacity: dev("2")}},
			want: with(map[string]func(*summary){
				"c5.large": func(s *summary) { s.Device, s.DevBy = "2", "b" },
			}), verdicts: map[string]string{"a": karpv1alpha1.ReasonConflict, "b": ""}},
		{name: "equal weight capacity on different resources merges", overlays: []ov{
			{name: "a", capacity: dev("1")},
			{name: "b", capacity: corev1.ResourceList{"example.com/other": resource.MustParse("1")}}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.Device, s.DevBy = "1", "a" },
				"c5.large": func(s *summary) { s.Device, s.DevBy = "1", "a" },
			}), verdicts: map[string]string{"a": "", "b": ""}},
		{name: "price and capacity of equal weight do not conflict", overlays: []ov{
			{name: "a", capacity: dev("1")}, {name: "b", adjust: "+1"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.Device, s.DevBy, s.OnDemand, s.Spot, s.PriceBy = "1", "a", 1.096, 1.0288, "b" },
				"c5.large": func(s *summary) { s.Device, s.DevBy, s.OnDemand, s.Spot, s.PriceBy = "1", "a", 1.085, 1.0255, "b" },
			}), verdicts: map[string]string{"a": "", "b": ""}},
		{name: "select by nodepool", np: pool("gpu", nil), overlays: []ov{
			{name: "other", reqs: []karpv1alpha1.NodeSelectorRequirement{in(karpv1.NodePoolLabelKey, "default")}, price: "9"},
			{name: "mine", reqs: []karpv1alpha1.NodeSelectorRequirement{in(karpv1.NodePoolLabelKey, "gpu")}, capacity: dev("1")}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.Device, s.DevBy = "1", "mine" },
				"c5.large": func(s *summary) { s.Device, s.DevBy = "1", "mine" },
			}), verdicts: map[string]string{"other": "", "mine": ""}},
		{name: "select by template label", np: pool("default", map[string]string{"team": "a"}), overlays: []ov{
			{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in("team", "a"), in(family, "m5")}, price: "0"},
			{name: "b", reqs: []karpv1alpha1.NodeSelectorRequirement{in("team", "b")}, price: "9"}},
			want: with(map[string]func(*summary){
				"m5.large": func(s *summary) { s.OnDemand, s.Spot, s.PriceBy = 0, 0, "a" },
			}), verdicts: map[string]string{"a": "", "b": ""}},
		{name: "select by zone and numeric label", overlays: []ov{
			{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in("topology.kubernetes.io/zone", "test-zone-b")}, price: "7"}},
			want: base, verdicts: map[string]string{"a": ""}},
		{name: "runtime validation", overlays: []ov{{name: "bad", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "not a label value")}, price: "1"}},
			want: base, verdicts: map[string]string{"bad": karpv1alpha1.ReasonRuntimeValidation}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			np := c.np
			if np == nil {
				np = pool("default", nil)
			}
			its := types()
			applied, verdicts := overlay.Evaluate(build(c.overlays...), []overlay.Pool{{NodePool: np, InstanceTypes: its}})
			gotVerdicts := map[string]string{}
			for n, v := range verdicts {
				gotVerdicts[n] = v.Reason
				if v.Reason != "" && v.Message == "" {
					t.Errorf("verdict of %s has no message", n)
				}
			}
			if diff := cmp.Diff(c.verdicts, gotVerdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			got := overlay.Apply(applied, overlay.PoolLabels(np), its)
			if diff := cmp.Diff(c.want, summarize(got)); diff != "" {
				t.Errorf("instance types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(base, summarize(its)); diff != "" {
				t.Errorf("the cloud provider's instance types were modified (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConflictAcrossNodePools(t *testing.T) {
	// a and b (equal weight) both price m5.large, but b only in NodePool "b": a conflicts there and so is
	// applied in no NodePool.
	overlays := build(
		ov{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "m5")}, price: "1"},
		ov{name: "b", reqs: []karpv1alpha1.NodeSelectorRequirement{in(karpv1.NodePoolLabelKey, "b")}, price: "2"},
	)
	_, verdicts := overlay.Evaluate(overlays, []overlay.Pool{
		{NodePool: pool("a", nil), InstanceTypes: types()},
		{NodePool: pool("b", nil), InstanceTypes: types()},
	})
	if verdicts["a"].Reason != karpv1alpha1.ReasonConflict || !verdicts["b"].Applied() {
		t.Errorf("verdicts: %+v", verdicts)
	}
}

func TestHugepagesReduceMemory(t *testing.T) {
	o := build(ov{name: "hp", capacity: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}})
	its := types()
	got := overlay.Apply(o, overlay.PoolLabels(pool("default", nil)), its)
	before, after := its[0].Allocatable()[corev1.ResourceMemory], got[0].Allocatable()[corev1.ResourceMemory]
	before.Sub(resource.MustParse("1Gi"))
	if before.Cmp(after) != 0 {
		t.Errorf("memory allocatable %s, want %s", after.String(), before.String())
	}
}

func TestStoreAndWrap(t *testing.T) {
	cp := fake.New(clocktesting.NewFakeClock(time.Now()))
	cp.SetInstanceTypes(types())
	store := overlay.NewStore()
	w := overlay.Wrap(cp, store)
	np := pool("default", nil)
	if _, err := w.GetInstanceTypes(context.Background(), np); !errors.Is(err, overlay.ErrNotEvaluated) || !cloudprovider.IsNodeClassNotReady(err) {
		t.Fatalf("before evaluation: %v", err)
	}
	store.Set(build(ov{name: "a", reqs: []karpv1alpha1.NodeSelectorRequirement{in(family, "c5")}, price: "0.001"}))
	its, err := w.GetInstanceTypes(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	if s := summarize(its)["c5.large"]; s.OnDemand != 0.001 || s.PriceBy != "a" {
		t.Errorf("c5.large: %+v", s)
	}
	if w.Unwrap() != cp {
		t.Error("Unwrap does not return the wrapped provider")
	}
}
