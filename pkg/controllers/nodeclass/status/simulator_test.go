package status_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/settings"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestStatusWithSimulator runs the controller with the real AWS provider against the simulator: the example
// EC2NodeClass of the compatibility spec becomes Ready with every status field filled, and deleting it removes
// the instance profile Dovetail created.
func TestStatusWithSimulator(t *testing.T) {
	sim, err := awssim.New(awssim.Options{ClusterCA: []byte("CA"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := awssdk.Config{
		Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKIDACCOUNTA", "secret", ""),
		BaseEndpoint: awssdk.String(srv.URL), RetryMaxAttempts: 1, HTTPClient: sdk.NewHTTPClient(srv.Client()),
	}

	mgr, c := newManager(t)
	ctx := context.Background()
	cp, err := aws.NewCloudProvider(ctx, aws.Options{
		Settings:   &settings.Settings{ClusterName: "dovetail", VMMemoryOverheadPercent: 0.075},
		ClusterUID: "uid-a", KubeClient: mgr.GetClient(), AWSConfig: &cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	// As the operator wires it: the provider wrapped in metrics instrumentation.
	instrumented := metrics.Instrument(cp, metrics.NewForTest())
	if err := status.NewController(deps.Deps{Client: mgr.GetClient(), CloudProvider: instrumented, Clock: clock.RealClock{}}).Register(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	run(t, mgr)

	if err := c.Create(ctx, test.EC2NodeClass("default", "dovetail").Obj()); err != nil {
		t.Fatal(err)
	}
	var profile string
	eventually(t, func() string {
		nc := &awsv1.EC2NodeClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeReady) {
			var msgs []string
			for _, cond := range nc.Status.Conditions {
				msgs = append(msgs, cond.Type+"="+string(cond.Status)+" "+cond.Message)
			}
			return "not Ready: " + strings.Join(msgs, "; ")
		}
		if len(nc.Status.Subnets) != 3 || len(nc.Status.SecurityGroups) == 0 || len(nc.Status.AMIs) < 2 || nc.Status.InstanceProfile == "" {
			return "status incomplete"
		}
		profile = nc.Status.InstanceProfile
		return ""
	})

	if err := c.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string {
		if err := c.Get(ctx, client.ObjectKey{Name: "default"}, &awsv1.EC2NodeClass{}); client.IgnoreNotFound(err) != nil || err == nil {
			return "EC2NodeClass still present"
		}
		return ""
	})
	_, err = iam.NewFromConfig(cfg).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(profile)})
	if sdk.ErrorCode(err) != "NoSuchEntity" {
		t.Errorf("instance profile %s after the EC2NodeClass was deleted: %v, want NoSuchEntity", profile, err)
	}
}
