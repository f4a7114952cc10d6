package hashversion

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodePoolVersion is the hashing scheme of NodePool, written to karpenter.sh/nodepool-hash-version. A NodeClaim
// whose version differs from its NodePool's must be re-hashed (Restamp), not treated as drifted.
const NodePoolVersion = "dovetail-v1"

// hashed is the canonical form of the drift-relevant template fields; field order is fixed and maps are
// encoded with sorted keys by encoding/json.
type hashed struct {
	Labels                 map[string]string          `json:"labels,omitempty"`
	Annotations            map[string]string          `json:"annotations,omitempty"`
	Taints                 []corev1.Taint             `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint             `json:"startupTaints,omitempty"`
	NodeClassRef           *karpv1.NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfter            string                     `json:"expireAfter,omitempty"`
	TerminationGracePeriod string                     `json:"terminationGracePeriod,omitempty"`
}

// NodePool returns the hash of a NodePool's template (karpenter.sh/nodepool-hash). Taint order does not matter.
func NodePool(np *karpv1.NodePool) string {
	t := np.Spec.Template
	h := hashed{
		Labels:        t.Labels,
		Annotations:   t.Annotations,
		Taints:        sortedTaints(t.Spec.Taints),
		StartupTaints: sortedTaints(t.Spec.StartupTaints),
		NodeClassRef:  t.Spec.NodeClassRef,
	}
	if !t.Spec.ExpireAfter.IsZero() {
		h.ExpireAfter = t.Spec.ExpireAfter.String()
	}
	if t.Spec.TerminationGracePeriod != nil {
		h.TerminationGracePeriod = t.Spec.TerminationGracePeriod.Duration.String()
	}
	b, err := json.Marshal(h)
	if err != nil {
		// Only maps of strings, strings and core types: marshalling cannot fail.
		panic(fmt.Sprintf("hashing nodepool %s: %v", np.Name, err))
	}
	f := fnv.New64a()
	_, _ = f.Write(b)
	return fmt.Sprintf("%d", f.Sum64())
}

func sortedTaints(in []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(in))
	for _, t := range in {
		t.TimeAdded = nil
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		if out[i].Effect != out[j].Effect {
			return out[i].Effect < out[j].Effect
		}
		return out[i].Value < out[j].Value
	})
	return out
}
