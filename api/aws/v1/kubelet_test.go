package v1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestKubeletConfigurationExtraRoundTrip(t *testing.T) {
	in := `{"maxPods":50,"serializeImagePulls":false,"logging":{"format":"json","verbosity":2},"evictionHard":{"memory.available":"5%"}}`
	var k KubeletConfiguration
	if err := json.Unmarshal([]byte(in), &k); err != nil {
		t.Fatal(err)
	}
	want := KubeletConfiguration{
		MaxPods:      ptr.To[int32](50),
		EvictionHard: map[string]string{"memory.available": "5%"},
		Extra: map[string]apiextensionsv1.JSON{
			"serializeImagePulls": {Raw: []byte(`false`)},
			"logging":             {Raw: []byte(`{"format":"json","verbosity":2}`)},
		},
	}
	if d := cmp.Diff(want, k); d != "" {
		t.Fatalf("decoded (-want +got):\n%s", d)
	}
	out, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var gotMap, wantMap map[string]interface{}
	if err := json.Unmarshal(out, &gotMap); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(in), &wantMap)
	if d := cmp.Diff(wantMap, gotMap); d != "" {
		t.Errorf("re-encoded (-want +got):\n%s", d)
	}
	if c := k.DeepCopy(); !cmp.Equal(c, &k) {
		t.Errorf("DeepCopy lost fields: %+v", c)
	}
	if !IsModelledKubeletField("maxPods") || IsModelledKubeletField("serializeImagePulls") {
		t.Errorf("IsModelledKubeletField disagrees with the Go fields")
	}
}

func TestKubeletConfigurationWithoutExtra(t *testing.T) {
	out, err := json.Marshal(KubeletConfiguration{MaxPods: ptr.To[int32](10)})
	if err != nil || string(out) != `{"maxPods":10}` {
		t.Errorf("Marshal = %s, %v; want {\"maxPods\":10}", out, err)
	}
}
