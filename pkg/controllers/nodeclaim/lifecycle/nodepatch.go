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
// Node: labels, annotations, finalizers, owner references and taints. The finalizers and owner references are
// replaced whole, each after a test that the Node still has the list it was computed from; the taints are
// changed one by one (taintOps). The patch then fails (the API server answers 422) when another writer changed
// what it replaces meanwhile — the cloud controller manager lifting its uninitialized taint must not be undone —
// but not when the kubelet's status writes or anyone's label changes moved the Node's resourceVersion, as an
// optimistic lock on the whole object did on most Nodes of a scale-out. Map keys are set one by one and leave
// the other keys alone. It returns nil when there is nothing to change.
func registrationPatch(before, desired *corev1.Node) ([]byte, error) {
	var ops []jsonPatchOp
	ops = append(ops, mapOps("/metadata/labels", before.Labels, desired.Labels)...)
	ops = append(ops, mapOps("/metadata/annotations", before.Annotations, desired.Annotations)...)
	ops = append(ops, listOps("/metadata/finalizers", before.Finalizers, desired.Finalizers)...)
	ops = append(ops, listOps("/metadata/ownerReferences", before.OwnerReferences, desired.OwnerReferences)...)
	ops = append(ops, taintOps(before.Spec.Taints, desired.Spec.Taints)...)
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

// taintOps removes the taints of before that desired lacks, each where before has it and after a test that it is
// still there (from the last, so that the indices tested stay right), and appends those desired adds. The other
// taints are neither sent nor tested: the node lifecycle controller adding or lifting its not-ready taint as the
// Node registers no longer fails the patch, as a test of the whole list did on about two Nodes in three of a
// scale-out. With no taints before, the list is added whole after a test that there still is none.
func taintOps(before, desired []corev1.Taint) []jsonPatchOp {
	if len(before) == 0 {
		return listOps("/spec/taints", before, desired)
	}
	has := func(list []corev1.Taint, t corev1.Taint) bool {
		for _, o := range list {
			if equality.Semantic.DeepEqual(o, t) {
				return true
			}
		}
		return false
	}
	var ops []jsonPatchOp
	for i := len(before) - 1; i >= 0; i-- {
		if !has(desired, before[i]) {
			path := fmt.Sprintf("/spec/taints/%d", i)
			ops = append(ops, jsonPatchOp{Op: "test", Path: path, Value: before[i]}, jsonPatchOp{Op: "remove", Path: path})
		}
	}
	for _, t := range desired {
		if !has(before, t) {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/spec/taints/-", Value: t})
		}
	}
	return ops
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
