package deps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RemoveFinalizerPatch returns the JSON patch (RFC 6902) that removes finalizer from the object's finalizers,
// where obj (the copy read) has it, after a test that the API server still has it there; nil when obj has none.
// Only that entry is tested: a status write or a label change meanwhile does not make the patch fail, as an
// optimistic lock on the whole object did (825 of 1,550 NodeClaim finalizer and annotation patches of a 700-node
// drift were refused for it); a change to the list before the entry does, as it moves the entry.
func RemoveFinalizerPatch(obj client.Object, finalizer string) ([]byte, error) {
	i := slices.Index(obj.GetFinalizers(), finalizer)
	if i < 0 {
		return nil, nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	body, err := json.Marshal([]patchOp{
		{Op: "test", Path: path, Value: json.RawMessage(mustJSON(finalizer))},
		{Op: "remove", Path: path},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding finalizer patch: %w", err)
	}
	return body, nil
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// RemoveFinalizer removes finalizer from the object (obj as read) with RemoveFinalizerPatch. A failed test (the
// list changed before the entry since obj was read) is returned as a Conflict, so callers treat it as the stale
// copy it is. It does nothing when obj has no such finalizer; on success obj holds the object as written.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, resource schema.GroupResource) error {
	body, err := RemoveFinalizerPatch(obj, finalizer)
	if err != nil || body == nil {
		return err
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, body))
	if failedTest(err) {
		return apierrors.NewConflict(resource, obj.GetName(), err)
	}
	return err
}
