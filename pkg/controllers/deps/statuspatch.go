package deps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// NodeClaimStatusPatch returns the JSON patch (RFC 6902) that makes the status stored read into nc's, with only
// what differs: each changed status field set (or removed) whole, and each changed condition replaced (or
// removed) where stored has it, after a test that the API server still holds it as stored read it, or appended
// when stored has none of its type. The conditions of other types, which other controllers write, are neither
// sent nor tested, so their writes meanwhile do not make this one fail, as an optimistic lock on the whole
// NodeClaim did; a change to the same condition does (the API server answers 422 to the failed test). When stored
// has no status, the patch tests that the API server has none either and sets the whole status; when it has no
// conditions, that it has no list either and sets the list: a status or a list made meanwhile fails the test
// rather than being replaced. first is true in the first case (see PatchNodeClaimStatus). The patch is nil when
// nothing differs.
func NodeClaimStatusPatch(stored, nc *karpv1.NodeClaim) (patch []byte, first bool, err error) {
	return statusPatch(stored.Status, nc.Status, stored.Status.Conditions, nc.Status.Conditions)
}

// NodePoolStatusPatch is NodeClaimStatusPatch for a NodePool: its counted resources and nodes, observed node
// class generation and conditions.
func NodePoolStatusPatch(stored, np *karpv1.NodePool) (patch []byte, first bool, err error) {
	return statusPatch(stored.Status, np.Status, stored.Status.Conditions, np.Status.Conditions)
}

// statusPatch builds the patch between two statuses of one kind (see NodeClaimStatusPatch); the conditions are
// the statuses' own.
func statusPatch(storedStatus, status any, storedConds, conds []metav1.Condition) (patch []byte, first bool, err error) {
	before, err := fieldsOf(storedStatus)
	if err != nil {
		return nil, false, err
	}
	after, err := fieldsOf(status)
	if err != nil {
		return nil, false, err
	}
	if len(before) == 0 {
		if len(after) == 0 {
			return nil, false, nil
		}
		whole, err := json.Marshal(status)
		if err != nil {
			return nil, false, fmt.Errorf("encoding status: %w", err)
		}
		// A created object has no status (the API server drops it); a status written since fails the test.
		return encodeOps([]patchOp{{Op: "test", Path: "/status", Value: json.RawMessage(jsonNull)}, {Op: "add", Path: "/status", Value: whole}}, true)
	}
	var ops []patchOp
	keys := make([]string, 0, len(before)+len(after))
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "conditions" {
			continue
		}
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case inAfter && (!inBefore || !jsonEqual(a, b)):
			ops = append(ops, patchOp{Op: "add", Path: "/status/" + k, Value: a})
		case inBefore && !inAfter:
			ops = append(ops, patchOp{Op: "remove", Path: "/status/" + k})
		}
	}
	switch {
	case len(storedConds) == 0 && len(conds) > 0:
		list, err := json.Marshal(conds)
		if err != nil {
			return nil, false, fmt.Errorf("encoding conditions: %w", err)
		}
		ops = append(ops, patchOp{Op: "test", Path: "/status/conditions", Value: json.RawMessage(jsonNull)},
			patchOp{Op: "add", Path: "/status/conditions", Value: list})
	default:
		condOps, err := conditionOps(storedConds, conds)
		if err != nil {
			return nil, false, err
		}
		ops = append(ops, condOps...)
	}
	return encodeOps(ops, false)
}

// jsonNull is the value of a test that a path is absent: the API server's JSON patch takes a missing member as
// equal to null.
const jsonNull = "null"

func encodeOps(ops []patchOp, first bool) ([]byte, bool, error) {
	if len(ops) == 0 {
		return nil, first, nil
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return nil, false, fmt.Errorf("encoding status patch: %w", err)
	}
	return out, first, nil
}

// conditionOps replaces the changed conditions in place, removes the dropped ones (from the last, so the indices
// tested stay right) and appends the new ones.
func conditionOps(before, after []metav1.Condition) ([]patchOp, error) {
	at := map[string]int{}
	for i, c := range before {
		at[c.Type] = i
	}
	var ops, appends []patchOp
	var dropped []int
	kept := map[string]bool{}
	for i := range after {
		c := &after[i]
		kept[c.Type] = true
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		j, ok := at[c.Type]
		if !ok {
			appends = append(appends, patchOp{Op: "add", Path: "/status/conditions/-", Value: raw})
			continue
		}
		if equality.Semantic.DeepEqual(before[j], *c) {
			continue
		}
		was, err := json.Marshal(before[j])
		if err != nil {
			return nil, err
		}
		path := fmt.Sprintf("/status/conditions/%d", j)
		ops = append(ops, patchOp{Op: "test", Path: path, Value: was}, patchOp{Op: "replace", Path: path, Value: raw})
	}
	for i, c := range before {
		if !kept[c.Type] {
			dropped = append(dropped, i)
		}
	}
	slices.Reverse(dropped)
	for _, j := range dropped {
		was, err := json.Marshal(before[j])
		if err != nil {
			return nil, err
		}
		path := fmt.Sprintf("/status/conditions/%d", j)
		ops = append(ops, patchOp{Op: "test", Path: path, Value: was}, patchOp{Op: "remove", Path: path})
	}
	return append(ops, appends...), nil
}

// fieldsOf returns the status's JSON fields.
func fieldsOf(s any) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	out := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding status: %w", err)
	}
	return out, nil
}

func jsonEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// PatchNodeClaimStatus writes nc's status where it differs from stored (the copy it was changed from) with
// NodeClaimStatusPatch. A failed test of the JSON patch (a condition written by someone else since stored was
// read) is returned as a Conflict, so callers treat it as the stale copy it is; a first status whose test failed
// is written once more as a merge patch under an optimistic lock, which lands if the API server holds an empty
// status and the object is as read. On success nc holds the NodeClaim as written.
func PatchNodeClaimStatus(ctx context.Context, c client.Client, stored, nc *karpv1.NodeClaim) error {
	body, first, err := NodeClaimStatusPatch(stored, nc)
	if err != nil {
		return err
	}
	return writeStatus(ctx, c, stored, nc, "nodeclaims", body, first)
}

// PatchNodePoolStatus is PatchNodeClaimStatus for a NodePool, whose status the NodePool counter, readiness and
// registration health write.
func PatchNodePoolStatus(ctx context.Context, c client.Client, stored, np *karpv1.NodePool) error {
	body, first, err := NodePoolStatusPatch(stored, np)
	if err != nil {
		return err
	}
	return writeStatus(ctx, c, stored, np, "nodepools", body, first)
}

func writeStatus(ctx context.Context, c client.Client, stored, obj client.Object, resource string, body []byte, first bool) error {
	if body == nil {
		return nil
	}
	err := c.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body))
	if first && err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		// An empty status stored as {} (as clients of typed objects other than the API server keep it) fails the
		// test for none too; the lock tells it from a status written since.
		return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	}
	if failedTest(err) {
		log.FromContext(ctx).V(1).Info("status patch refused: computed from a stale copy", "name", obj.GetName(),
			"resource", resource, "patch", string(body), "error", err.Error())
		return apierrors.NewConflict(schema.GroupResource{Group: karpv1.Group, Resource: resource}, obj.GetName(), err)
	}
	return err
}

// failedTest reports whether err is the API server's answer to a JSON patch computed from a stale copy: 422
// without causes (a failed test; a validation error names its fields), or 422 whose causes are all duplicate
// conditions (a condition appended that someone else appended since the copy was read).
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	if details == nil || len(details.Causes) == 0 {
		return true
	}
	for _, c := range details.Causes {
		if c.Type != metav1.CauseTypeFieldValueDuplicate || !strings.HasPrefix(c.Field, "status.conditions") {
			return false
		}
	}
	return true
}

// KeepOnlyConditions makes nc's conditions stored's, with only the conditions of the given types taken from nc
// (set, changed or removed), for a writer that means to change those conditions alone. SetCondition also restamps
// the root Ready condition with the NodeClaim's generation, which a deletion bumps and which every other condition
// writer restamps too: sent along, that restamp made the write fail its test whenever another writer's came first
// (55 refused Drained writes as a 700-node drift began). Ready's observedGeneration is left to the lifecycle.
func KeepOnlyConditions(stored, nc *karpv1.NodeClaim, types ...string) {
	conds := slices.Clone(stored.Status.Conditions)
	for _, t := range types {
		i := slices.IndexFunc(conds, func(c metav1.Condition) bool { return c.Type == t })
		want := nc.GetCondition(t)
		switch {
		case want == nil && i >= 0:
			conds = slices.Delete(conds, i, i+1)
		case want != nil && i >= 0:
			conds[i] = *want
		case want != nil:
			conds = append(conds, *want)
		}
	}
	nc.Status.Conditions = conds
}
