package v1

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KubeletConfiguration is spec.kubelet: fields of the upstream kubelet configuration
// (kubelet.config.k8s.io/v1beta1 KubeletConfiguration) by their JSON names, each value kept exactly as written.
// As in Karpenter v1.15 the API server accepts any object here; names, types and values are checked by the
// EC2NodeClass status controller (ValidateKubelet), which reports a refused configuration as
// ValidationSucceeded=False. The fields Dovetail reads itself are those of ParsedKubelet; AL2023 passes every
// other field to the node's kubelet, the other AMI families refuse them (UnmodelledKubeletFields).
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:Type=object
type KubeletConfiguration map[string]apiextensionsv1.JSON

// ParsedKubelet is the typed view of the kubelet fields Dovetail reads (scheduling arithmetic and bootstrap
// flags). MaxPods is an integer or, behind the NodeClassCEL feature gate, a CEL expression; the values of
// KubeReserved and SystemReserved are quantities or CEL expressions.
type ParsedKubelet struct {
	ClusterDNS                  []string                   `json:"clusterDNS,omitempty"`
	MaxPods                     *intstr.IntOrString        `json:"maxPods,omitempty"`
	PodsPerCore                 *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved              map[string]string          `json:"systemReserved,omitempty"`
	KubeReserved                map[string]string          `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32                     `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32                     `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool                      `json:"cpuCFSQuota,omitempty"`
}

// modelledKubeletFields are the JSON names of ParsedKubelet's fields.
func modelledKubeletFields() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(ParsedKubelet{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// IsModelledKubeletField reports whether name (a kubelet configuration JSON name) is one ParsedKubelet reads.
func IsModelledKubeletField(name string) bool { return modelledKubeletFields()[name] }

// UnmodelledKubeletFields returns, sorted, the names in k that ParsedKubelet does not read. Only AMI families that
// write the whole configuration to the node (AL2023) apply them.
func UnmodelledKubeletFields(k KubeletConfiguration) []string {
	modelled := modelledKubeletFields()
	var out []string
	for name := range k {
		if !modelled[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Unmodelled returns the fields of k that ParsedKubelet does not read, by name (nil when there are none).
func (k KubeletConfiguration) Unmodelled() map[string]json.RawMessage {
	names := UnmodelledKubeletFields(k)
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(names))
	for _, name := range names {
		out[name] = slices.Clone(k[name].Raw)
	}
	return out
}

// Parse decodes the fields Dovetail reads. An empty configuration parses to an empty ParsedKubelet; a field of the
// wrong type is an error naming it.
func (k KubeletConfiguration) Parse() (*ParsedKubelet, error) {
	out := &ParsedKubelet{}
	if len(k) == 0 {
		return out, nil
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("spec.kubelet: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("spec.kubelet: %w", err)
	}
	return out, nil
}

// String is the configuration as JSON with its keys sorted ("null" when empty), stable for hashing.
func (k KubeletConfiguration) String() string {
	if len(k) == 0 {
		return "null"
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return fmt.Sprintf("invalid: %v", err)
	}
	return string(raw)
}

// KubeletValue returns v encoded as a kubelet configuration value; for building configurations in code and tests.
func KubeletValue(v interface{}) apiextensionsv1.JSON {
	raw, err := json.Marshal(v)
	if err != nil {
		// Only values json cannot encode (channels, functions) get here: a programming error.
		panic(fmt.Sprintf("encoding kubelet value %v: %v", v, err))
	}
	return apiextensionsv1.JSON{Raw: raw}
}

// HasExpressions reports whether the configuration holds a CEL expression: maxPods written as a string, or a
// kubeReserved or systemReserved value that is not a quantity.
func (p *ParsedKubelet) HasExpressions() bool {
	if p == nil {
		return false
	}
	if p.MaxPods != nil && p.MaxPods.Type == intstr.String {
		return true
	}
	return len(p.ReservedExpressions()) > 0
}

// ReservedExpressions returns the kubeReserved and systemReserved entries that are not quantities, as
// "field[key]" -> value.
func (p *ParsedKubelet) ReservedExpressions() map[string]string {
	if p == nil {
		return nil
	}
	out := map[string]string{}
	for field, m := range map[string]map[string]string{"kubeReserved": p.KubeReserved, "systemReserved": p.SystemReserved} {
		for key, v := range m {
			if _, err := resource.ParseQuantity(v); err != nil {
				out[field+"["+key+"]"] = v
			}
		}
	}
	return out
}

// MaxPodsValue returns maxPods when it is an integer in int32 range; false when unset or an expression.
func (p *ParsedKubelet) MaxPodsValue() (*int32, bool) {
	if p == nil || p.MaxPods == nil || p.MaxPods.Type != intstr.Int {
		return nil, false
	}
	v := p.MaxPods.IntValue()
	if v < math.MinInt32 || v > math.MaxInt32 {
		return nil, false
	}
	n := int32(v)
	return &n, true
}

// StaticReserved returns m without the entries that are CEL expressions (not quantities).
func StaticReserved(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := maps.Clone(m)
	for k, v := range m {
		if _, err := resource.ParseQuantity(v); err != nil {
			delete(out, k)
		}
	}
	return out
}
