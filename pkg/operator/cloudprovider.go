package operator

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/settings"
)

// cloudProviderOptions are what the operator hands the cloud provider constructor.
type cloudProviderOptions struct {
	Settings   *settings.Settings
	ClusterUID string
	Reader     client.Reader
	Clock      clock.Clock
	// OnThrottle is called for every throttled AWS call attempt.
	OnThrottle func(service, operation string)
	// OnCall is called as every AWS operation returns.
	OnCall func(sdk.Call)
	// OnLaunchFailure and OnTerminationFailure are called for every CreateFleet error and failed
	// TerminateInstances call.
	OnLaunchFailure      func(capacityType, reason, zone, zoneID string)
	OnTerminationFailure func(zone, zoneID string)
	// OnUserData and OnNodeClassTemplatesDeleted follow the launch templates' user data sizes.
	OnUserData                  func(nodeClass string, bytes int)
	OnNodeClassTemplatesDeleted func(nodeClass string)
	// OnBatch is called as each batching window of the provider closes.
	OnBatch func(batcher string, size int, open time.Duration)
	// LaunchNotices are the launches the provisioner announces (shared with deps.Deps).
	LaunchNotices *cloudprovider.LaunchNotices
	// Kube reads the API server's version and the kube-dns Service (uncached).
	Kube kubernetes.Interface
}

// serverVersion returns the API server's Kubernetes version as major.minor ("1.34"; a "+" suffix of the minor
// is dropped, as some distributions add one).
func serverVersion(kube kubernetes.Interface) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		v, err := kube.Discovery().ServerVersion()
		if err != nil {
			return "", fmt.Errorf("reading the API server version: %w", err)
		}
		return v.Major + "." + strings.TrimSuffix(v.Minor, "+"), nil
	}
}

// kubeDNS returns the ClusterIP of the kube-system/kube-dns Service.
func kubeDNS(kube kubernetes.Interface) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("reading Service kube-system/kube-dns: %w", err)
		}
		return svc.Spec.ClusterIP, nil
	}
}

// newCloudProvider builds the AWS cloud provider (pkg/providers/aws). The SDK configuration (AWS_REGION,
// AWS_ENDPOINT_URL*, credentials) is loaded by the provider itself.
//
// LEAD: this is the one place where the provider is wired; keep it in sync with aws.Options.
func newCloudProvider(ctx context.Context, o cloudProviderOptions) (cloudprovider.CloudProvider, error) {
	var version, dns func(context.Context) (string, error)
	if o.Kube != nil {
		version, dns = serverVersion(o.Kube), kubeDNS(o.Kube)
	}
	cp, err := aws.NewCloudProvider(ctx, aws.Options{
		Settings:                    o.Settings,
		ClusterUID:                  o.ClusterUID,
		KubeClient:                  o.Reader,
		Clock:                       o.Clock,
		OnThrottle:                  o.OnThrottle,
		OnCall:                      o.OnCall,
		OnBatch:                     o.OnBatch,
		OnLaunchFailure:             o.OnLaunchFailure,
		OnTerminationFailure:        o.OnTerminationFailure,
		OnUserData:                  o.OnUserData,
		OnNodeClassTemplatesDeleted: o.OnNodeClassTemplatesDeleted,
		LaunchNotices:               o.LaunchNotices,
		ServerVersion:               version,
		KubeDNS:                     dns,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the AWS cloud provider: %w", err)
	}
	if o.Settings.EnableZonalShift {
		// As Karpenter: with ENABLE_ZONAL_SHIFT=true the controller does not start unless ARC knows the cluster.
		if err := cp.EnableZonalShift(ctx); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// newInterruptionQueue returns the interruption queue named by INTERRUPTION_QUEUE in the provider's account, or
// nil when the setting is empty.
func newInterruptionQueue(cp cloudprovider.CloudProvider, s *settings.Settings) (cloudprovider.InterruptionQueue, error) {
	if s.InterruptionQueue == "" {
		return nil, nil
	}
	p, ok := cp.(*aws.CloudProvider)
	if !ok {
		return nil, fmt.Errorf("INTERRUPTION_QUEUE is set but the %s cloud provider has no interruption queue", cp.Name())
	}
	return p.InterruptionQueue(s.InterruptionQueue), nil
}
