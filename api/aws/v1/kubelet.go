package v1

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// kubeletFields is the set of JSON names KubeletConfiguration models as Go fields; every other name goes to Extra.
var kubeletFields = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(KubeletConfiguration{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}()

// IsModelledKubeletField reports whether name (a KubeletConfiguration JSON name) has its own Go field.
func IsModelledKubeletField(name string) bool { return kubeletFields[name] }

// kubeletModelled has the modelled fields only; it breaks the recursion of the JSON methods.
type kubeletModelled KubeletConfiguration

// UnmarshalJSON reads the modelled fields and keeps the others in Extra.
func (in *KubeletConfiguration) UnmarshalJSON(data []byte) error {
	var m kubeletModelled
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return fmt.Errorf("kubelet configuration: %w", err)
	}
	*in = KubeletConfiguration(m)
	in.Extra = nil
	for k, v := range all {
		if kubeletFields[k] {
			continue
		}
		if in.Extra == nil {
			in.Extra = map[string]apiextensionsv1.JSON{}
		}
		in.Extra[k] = apiextensionsv1.JSON{Raw: slices.Clone(v)}
	}
	return nil
}

// MarshalJSON writes the modelled fields and Extra side by side.
func (in KubeletConfiguration) MarshalJSON() ([]byte, error) {
	raw, err := json.Marshal(kubeletModelled(in))
	if err != nil || len(in.Extra) == 0 {
		return raw, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(in.Extra)) {
		if kubeletFields[k] {
			return nil, fmt.Errorf("kubelet configuration: extra field %q has its own Go field", k)
		}
		all[k] = in.Extra[k].Raw
	}
	return json.Marshal(all)
}
