package provisioning

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestBoundMeanwhile(t *testing.T) {
	pods := schema.GroupKind{Kind: "Pod"}
	bound := apierrors.NewInvalid(pods, "web-1", field.ErrorList{
		field.Forbidden(field.NewPath("status", "nominatedNodeName"), "may not be set on pods that are already bound to a node"),
	})
	otherField := apierrors.NewInvalid(pods, "web-1", field.ErrorList{
		field.Forbidden(field.NewPath("status", "phase"), "may not be changed"),
	})
	otherType := apierrors.NewInvalid(pods, "web-1", field.ErrorList{
		field.Invalid(field.NewPath("status", "nominatedNodeName"), "x", "not a node name"),
	})
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nomination forbidden on a bound pod", err: bound, want: true},
		{name: "wrapped", err: fmt.Errorf("patching: %w", bound), want: true},
		{name: "another field forbidden", err: otherField},
		{name: "nomination invalid for another reason", err: otherType},
		{name: "conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-1", errors.New("modified"))},
		{name: "plain error", err: errors.New("connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundMeanwhile(tt.err); got != tt.want {
				t.Errorf("boundMeanwhile(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
