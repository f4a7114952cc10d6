package v1

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func kubelet(t *testing.T, doc string) KubeletConfiguration {
	t.Helper()
	var k KubeletConfiguration
	if err := json.Unmarshal([]byte(doc), &k); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	return k
}

func TestKubeletConfigurationParse(t *testing.T) {
	k := kubelet(t, `{"maxPods":50,"serializeImagePulls":false,"logging":{"format":"json"},"evictionHard":{"memory.available":"5%"},"kubeReserved":{"cpu":"vcpus * 10"}}`)
	p, err := k.Parse()
	if err != nil {
		t.Fatal(err)
	}
	want := &ParsedKubelet{MaxPods: ptr.To(intstr.FromInt32(50)), EvictionHard: map[string]string{"memory.available": "5%"},
		KubeReserved: map[string]string{"cpu": "vcpus * 10"}}
	if d := cmp.Diff(want, p); d != "" {
		t.Errorf("parsed (-want +got):\n%s", d)
	}
	if n, ok := p.MaxPodsValue(); !ok || *n != 50 {
		t.Errorf("MaxPodsValue = %v, %v; want 50", n, ok)
	}
	if !p.HasExpressions() {
		t.Errorf("kubeReserved cpu expression not seen")
	}
	if got := UnmodelledKubeletFields(k); !cmp.Equal(got, []string{"logging", "serializeImagePulls"}) {
		t.Errorf("UnmodelledKubeletFields = %v", got)
	}
	if got := string(k.Unmodelled()["logging"]); got != `{"format":"json"}` {
		t.Errorf("Unmodelled logging = %s", got)
	}
	if got, want := k.String(), `{"evictionHard":{"memory.available":"5%"},"kubeReserved":{"cpu":"vcpus * 10"},"logging":{"format":"json"},"maxPods":50,"serializeImagePulls":false}`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	if got := KubeletConfiguration(nil).String(); got != "null" {
		t.Errorf("empty String = %s", got)
	}
	expr := kubelet(t, `{"maxPods":"min(110, pods)"}`)
	pe, err := expr.Parse()
	if err != nil || !pe.HasExpressions() {
		t.Fatalf("maxPods expression: %v, %v", pe, err)
	}
	if _, ok := pe.MaxPodsValue(); ok {
		t.Errorf("MaxPodsValue of an expression reported a value")
	}
	if _, err := kubelet(t, `{"maxPods":true}`).Parse(); err == nil {
		t.Errorf("maxPods: true parsed")
	}
	if got := StaticReserved(map[string]string{"cpu": "100m", "memory": "pods * 11"}); !cmp.Equal(got, map[string]string{"cpu": "100m"}) {
		t.Errorf("StaticReserved = %v", got)
	}
}

// TestValidateKubelet follows the rules Karpenter v1.15 checks in its controller now that spec.kubelet is an open
// map: every case names the expected message part, "" for a valid configuration.
func TestValidateKubelet(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", `{}`, ""},
		{"modelled fields", `{"maxPods":110,"podsPerCore":10,"clusterDNS":["10.0.0.10"],"kubeReserved":{"cpu":"100m"},"systemReserved":{"memory":"1Gi"},"evictionHard":{"memory.available":"5%"},"evictionSoft":{"nodefs.available":"10%"},"evictionSoftGracePeriod":{"nodefs.available":"1m"},"evictionMaxPodGracePeriod":60,"imageGCHighThresholdPercent":85,"imageGCLowThresholdPercent":80,"cpuCFSQuota":true}`, ""},
		{"upstream fields", `{"serializeImagePulls":false,"maxParallelImagePulls":5,"logging":{"format":"json"},"featureGates":{"X":true},"containerLogMaxSize":"50Mi"}`, ""},
		{"maxPods expression", `{"maxPods":"min(pods, 110)"}`, ""},
		{"reserved expression", `{"kubeReserved":{"memory":"pods * 11Mi"}}`, ""},
		{"unknown field", `{"notAKubeletField":true}`, `unknown field "notAKubeletField"`},
		{"wrong type", `{"serializeImagePulls":"no"}`, "spec.kubelet: json: cannot unmarshal"},
		{"maxPods wrong type", `{"maxPods":true}`, "spec.kubelet: json: cannot unmarshal"},
		{"registerWithTaints", `{"registerWithTaints":[{"key":"a","effect":"NoSchedule"}]}`, "spec.kubelet.registerWithTaints may not be set"},
		{"eviction signal", `{"evictionHard":{"memory.free":"5%"}}`, `"memory.free" is not an eviction signal`},
		{"eviction percentage above 100", `{"evictionHard":{"memory.available":"101%"}}`, "neither a percentage from 0 to 100"},
		{"eviction negative quantity", `{"evictionHard":{"memory.available":"-1Gi"}}`, "neither a percentage from 0 to 100"},
		{"evictionMinimumReclaim signal", `{"evictionMinimumReclaim":{"x":"1Gi"}}`, `"x" is not an eviction signal`},
		{"soft without grace", `{"evictionSoft":{"memory.available":"5%"}}`, "evictionSoft[memory.available]: no evictionSoftGracePeriod"},
		{"grace without soft", `{"evictionSoftGracePeriod":{"memory.available":"1m"}}`, "evictionSoftGracePeriod[memory.available]: no evictionSoft"},
		{"grace not a duration", `{"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"soon"}}`, "not a non-negative duration"},
		{"reserved key", `{"kubeReserved":{"gpu":"1"}}`, `"gpu" is not a reservable resource`},
		{"reserved negative", `{"systemReserved":{"cpu":"-1"}}`, `systemReserved[cpu]: "-1" is negative`},
		{"gc percent range", `{"imageGCHighThresholdPercent":101}`, "101 is not between 0 and 100"},
		{"gc order", `{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":50}`, "must be greater than imageGCLowThresholdPercent"},
		{"negative podsPerCore", `{"podsPerCore":-1}`, "podsPerCore: -1 is negative"},
		{"negative maxPods", `{"maxPods":-1}`, "maxPods: -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateKubelet(kubelet(t, tc.doc))
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			got := strings.Join(msgs, "; ")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("ValidateKubelet(%s) = %q, want %q", tc.doc, got, tc.want)
			}
		})
	}
}
