package metrics

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EvictionCode is the code label of karpenter_nodes_eviction_requests_total for the result of one eviction
// request: 200 when it was accepted, the API server's HTTP status code when it was refused (429 for a
// PodDisruptionBudget, 404 for a pod already gone, ...). ok is false when the request got no answer from the
// API server (a connection error, a cancelled context): such a request is not counted.
func EvictionCode(err error) (code string, ok bool) {
	if err == nil {
		return strconv.Itoa(http.StatusOK), true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return strconv.Itoa(int(status.Status().Code)), true
	}
	return "", false
}
