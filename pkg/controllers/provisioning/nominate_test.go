package provisioning

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server refuses a nomination of a pod the kube-scheduler bound after the pass read it; that race is not
// an error (it was logged as "provisioning failed" with a stack trace in the throttled scale-out e2e scenario).
func TestBoundSinceRead(t *testing.T) {
	pod := schema.GroupKind{Kind: "Pod"}
	bound := apierrors.NewInvalid(pod, "app-1", field.ErrorList{
		field.Forbidden(field.NewPath("status", "nominatedNodeName"), "may not be set on pods that are already bound to a node")})
	other := apierrors.NewInvalid(pod, "app-1", field.ErrorList{
		field.Invalid(field.NewPath("status", "nominatedNodeName"), "Bad Name", "a lowercase RFC 1123 subdomain")})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"already bound", bound, true},
		{"already bound, wrapped", fmt.Errorf("patching: %w", bound), true},
		{"another invalid nomination", other, false},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "app-1", errors.New("modified")), false},
		{"not an API error", errors.New("already bound"), false},
	} {
		if got := boundSinceRead(tc.err); got != tc.want {
			t.Errorf("%s: boundSinceRead = %v, want %v", tc.name, got, tc.want)
		}
	}
}
