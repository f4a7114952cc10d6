package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// registrationPatch returns the JSON patch that turns before into desired, as far as registration changes a
// Node: labels, annotations, finalizers, owner references and taints. The lists (finalizers, owner references,
// taints) are replaced whole, each after a test that the Node still has the list it was computed from: the patch
// then fails (the API server answers 422) when another writer changed one of them meanwhile — the cloud
// controller manager lifting its uninitialized taint must not be undone — but not when the kubelet's status
// writes or anyone's label changes moved the Node's resourceVersion, as an optimistic lock on the whole object
// did on most Nodes of a scale-out. Map keys are set one by one and leave the other keys alone. It returns nil
// when there is nothing to change.
func registrationPatch(before, desired *corev1.Node) ([]byte, error) {
	var ops []jsonPatchOp
	ops = append(ops, mapOps("/metadata/labels", before.Labels, desired.Labels)...)
	ops = append(ops, mapOps("/metadata/annotations", before.Annotations, desired.Annotations)...)
	ops = append(ops, listOps("/metadata/finalizers", before.Finalizers, desired.Finalizers)...)
	ops = append(ops, listOps("/metadata/ownerReferences", before.OwnerReferences, desired.OwnerReferences)...)
	ops = append(ops, listOps("/spec/taints", before.Spec.Taints, desired.Spec.Taints)...)
	if len(ops) == 0 {
		return nil, nil
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding node patch: %w", err)
	}
	return out, nil
}

// mapOps sets the keys of desired whose values differ in before (registration only adds and overwrites keys).
func mapOps(path string, before, desired map[string]string) []jsonPatchOp {
	if before == nil {
		if len(desired) == 0 {
			return nil
		}
		return []jsonPatchOp{{Op: "add", Path: path, Value: desired}}
	}
	var ops []jsonPatchOp
	for k, v := range desired {
		if cur, ok := before[k]; !ok || cur != v {
			ops = append(ops, jsonPatchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: v})
		}
	}
	return ops
}

// listOps replaces the list at path with desired after testing that it is still before (null when empty: a
// test of null passes on a missing field).
func listOps[T any](path string, before, desired []T) []jsonPatchOp {
	if equality.Semantic.DeepEqual(before, desired) || (len(before) == 0 && len(desired) == 0) {
		return nil
	}
	var was any = before
	if len(before) == 0 {
		was = nil
	}
	return []jsonPatchOp{{Op: "test", Path: path, Value: was}, {Op: "add", Path: path, Value: desired}}
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
