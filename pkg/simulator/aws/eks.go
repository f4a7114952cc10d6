package awssim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// serveEKS answers EKS DescribeCluster (REST GET /clusters/{name}).
func (s *Simulator) serveEKS(w http.ResponseWriter, r *http.Request, a *account) {
	name := strings.TrimPrefix(r.URL.Path, "/clusters/")
	if err := s.applyFaults(r, "eks", "DescribeCluster"); err != nil {
		writeRESTError(w, err)
		return
	}
	if err := s.authorize(a, "eks", func() []authzCheck {
		return []authzCheck{{action: "eks:DescribeCluster", resource: fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", s.opts.Region, a.number, name)}}
	}); err != nil {
		writeRESTError(w, err)
		return
	}
	if name == "" || strings.Contains(name, "/") {
		writeRESTError(w, errNotFound("ResourceNotFoundException", "awssim simulates only DescribeCluster (GET /clusters/{name})"))
		return
	}
	if name != s.opts.ClusterName {
		writeRESTError(w, errNotFound("ResourceNotFoundException", "No cluster found for name: %s.", name))
		return
	}
	s.mu.Lock()
	var subnets, sgs []string
	for _, sn := range a.subnets {
		subnets = append(subnets, sn.ID)
	}
	for _, g := range a.sgs {
		sgs = append(sgs, g.ID)
	}
	vpc := a.vpcID
	version := s.k8sVersion
	s.mu.Unlock()
	cluster := map[string]any{
		"name":            name,
		"arn":             fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", s.opts.Region, a.number, name),
		"createdAt":       float64(s.started.UnixMilli()) / 1000,
		"version":         version,
		"endpoint":        s.opts.ClusterEndpoint,
		"status":          "ACTIVE",
		"platformVersion": "eks.1",
		"roleArn":         fmt.Sprintf("arn:aws:iam::%s:role/%s-cluster", a.number, name),
		"certificateAuthority": map[string]string{
			"data": base64.StdEncoding.EncodeToString(s.opts.ClusterCA),
		},
		"kubernetesNetworkConfig": s.kubernetesNetworkConfig(),
		"resourcesVpcConfig": map[string]any{"subnetIds": subnets, "securityGroupIds": sgs, "vpcId": vpc,
			"clusterSecurityGroupId": sgs[len(sgs)-1], "endpointPublicAccess": true, "endpointPrivateAccess": true},
		"tags": map[string]string{},
	}
	b, _ := json.Marshal(map[string]any{"cluster": cluster})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", s.requestID())
	_, _ = w.Write(b)
}

func writeRESTError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", e.Code)
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(map[string]string{"message": e.Message})
	_, _ = w.Write(b)
}
