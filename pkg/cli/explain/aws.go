package explain

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	awsprovider "github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/settings"
)

// awsInstanceTypes asks the AWS provider (the controller's own code, configured from AWS_REGION, AWS_ENDPOINT_URL
// and the credentials chain) for each NodePool's instance types. A NodePool whose EC2NodeClass is not ready gets
// none and a warning.
func awsInstanceTypes(ctx context.Context, c client.Reader, clusterName string, pools []*karpv1.NodePool) (map[string][]*cloudprovider.InstanceType, []string, error) {
	if clusterName == "" {
		return nil, nil, fmt.Errorf("--from-aws needs --cluster-name (or CLUSTER_NAME)")
	}
	s, err := settings.Parse([]string{"--cluster-name", clusterName}, func(string) string { return "" })
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster-name: %w", err)
	}
	var ns corev1.Namespace
	if err := c.Get(ctx, types.NamespacedName{Name: "kube-system"}, &ns); err != nil {
		return nil, nil, fmt.Errorf("reading namespace kube-system (its UID identifies the cluster): %w", err)
	}
	cp, err := awsprovider.NewCloudProvider(ctx, awsprovider.Options{Settings: s, ClusterUID: string(ns.UID), KubeClient: c})
	if err != nil {
		return nil, nil, fmt.Errorf("--from-aws: %w", err)
	}
	out := map[string][]*cloudprovider.InstanceType{}
	var warnings []string
	for _, np := range pools {
		its, err := cp.GetInstanceTypes(ctx, np)
		if err != nil {
			var notReady *cloudprovider.NodeClassNotReadyError
			if errors.As(err, &notReady) {
				warnings = append(warnings, fmt.Sprintf("NodePool %s: %v", np.Name, err))
				continue
			}
			return nil, nil, fmt.Errorf("--from-aws: instance types of NodePool %s: %w", np.Name, err)
		}
		out[np.Name] = its
	}
	return out, warnings, nil
}
