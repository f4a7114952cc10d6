package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRecordKubeRequest: the verb is rewritten by what the path names, and group, version, resource and
// subresource are read from it; paths outside /api and /apis are left out.
func TestRecordKubeRequest(t *testing.T) {
	tests := []struct {
		verb, path string
		// want is the series' labels as verb,group,version,kind,subresource; "" for no series.
		want string
	}{
		{"GET", "/api/v1/namespaces/{namespace}/pods/{name}", "GET,,v1,pods,"},
		{"GET", "/api/v1/namespaces/{namespace}/pods", "LIST,,v1,pods,"},
		{"GET", "/api/v1/nodes", "LIST,,v1,nodes,"},
		{"POST", "/api/v1/namespaces/{namespace}/pods/{name}/eviction", "CREATE,,v1,pods,eviction"},
		{"PUT", "/apis/karpenter.sh/v1/nodeclaims/{name}/status", "UPDATE,karpenter.sh,v1,nodeclaims,status"},
		{"PUT", "/apis/karpenter.sh/v1/nodeclaims", "CREATE,karpenter.sh,v1,nodeclaims,"},
		{"PATCH", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "PATCH,coordination.k8s.io,v1,leases,"},
		{"DELETE", "/api/v1/nodes/{name}", "DELETE,,v1,nodes,"},
		{"GET", "/api/v1/namespaces/{name}", "GET,,v1,namespaces,"},
		{"GET", "/version", ""},
		{"GET", "/apis", ""},
		{"GET", "/api/v1", ""},
		{"GET", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.verb+" "+tt.path, func(t *testing.T) {
			m := NewForTest()
			m.RecordKubeRequest(tt.verb, tt.path, 20*time.Millisecond)
			n := testutil.CollectAndCount(m.ClientGoRequestDuration)
			if tt.want == "" {
				if n != 0 {
					t.Fatalf("%d series, want none", n)
				}
				return
			}
			if n != 1 {
				t.Fatalf("%d series, want one: %s", n, tt.want)
			}
			// Read before any other series exists: a sum of 0 means the one series has other labels.
			if sum := sampleSum(t, m.ClientGoRequestDuration, strings.Split(tt.want, ",")...); sum != 0.02 {
				t.Fatalf("series %s has sum %v, want 0.02 (the observation went under other labels)", tt.want, sum)
			}
		})
	}
}

// TestCountKubeResult: answers count by code and method.
func TestCountKubeResult(t *testing.T) {
	m := NewForTest()
	m.CountKubeResult("200", "GET")
	m.CountKubeResult("200", "GET")
	m.CountKubeResult("<error>", "POST")
	want := `
# HELP client_go_request_total ` + helpOf("client_go_request_total") + `
# TYPE client_go_request_total counter
client_go_request_total{code="200",method="GET"} 2
client_go_request_total{code="<error>",method="POST"} 1
`
	if err := testutil.CollectAndCompare(m.ClientGoRequests, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
