package sdk

import (
	"errors"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func TestWrap(t *testing.T) {
	cases := []struct {
		name          string
		err           error
		wantThrottled bool
		wantNotFound  bool
	}{
		{name: "throttle", err: &smithy.GenericAPIError{Code: "RequestLimitExceeded"}, wantThrottled: true},
		{name: "not found", err: &smithy.GenericAPIError{Code: "InvalidInstanceID.NotFound"}, wantNotFound: true},
		{name: "other", err: errors.New("boom")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Wrap(tc.err, "describing %s", "x")
			if cloudprovider.IsThrottled(got) != tc.wantThrottled {
				t.Errorf("IsThrottled(%v) = %v, want %v", got, !tc.wantThrottled, tc.wantThrottled)
			}
			if IsNotFound(got) != tc.wantNotFound {
				t.Errorf("IsNotFound(%v) = %v, want %v", got, !tc.wantNotFound, tc.wantNotFound)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("wrapped error lost its cause")
			}
		})
	}
	if Wrap(nil, "x") != nil {
		t.Errorf("Wrap(nil) != nil")
	}
}
