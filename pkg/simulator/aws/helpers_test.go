package awssim

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// env is one simulator behind an httptest server plus SDK clients for one account.
type env struct {
	sim   *Simulator
	srv   *httptest.Server
	clock *clocktesting.FakeClock
	sink  *fakeSink
	cfg   aws.Config
	ec2   *ec2.Client
	ssm   *ssm.Client
	iam   *iam.Client
	sqs   *sqs.Client
	eks   *eks.Client
	price *pricing.Client
}

func newEnv(t *testing.T, mutate ...func(*Options)) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sink := newFakeSink()
	var logOut io.Writer = io.Discard
	if os.Getenv("AWSSIM_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	opts := Options{Clock: clk, Nodes: sink, ClusterCA: []byte("CA"), Logger: slog.New(slog.NewTextHandler(logOut, nil)),
		Timing: Timing{Pending: 2 * time.Second, ShuttingDown: 2 * time.Second, TerminatedRetention: time.Minute,
			UninitializedTaintDelayMin: time.Second, UninitializedTaintDelayMax: time.Second}}
	for _, m := range mutate {
		m(&opts)
	}
	sim, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	e := &env{sim: sim, srv: srv, clock: clk, sink: sink}
	e.cfg = sdkConfig(srv, "AKIDACCOUNTA")
	e.clients()
	return e
}

func sdkConfig(srv *httptest.Server, key string) aws.Config {
	return aws.Config{
		Region:           "us-west-2",
		Credentials:      credentials.NewStaticCredentialsProvider(key, "secret", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: 1,
		// The server's own transport behind the provider's body-detaching client (see sdk.NewHTTPClient).
		HTTPClient: sdk.NewHTTPClient(srv.Client()),
	}
}

func (e *env) clients() {
	e.ec2 = ec2.NewFromConfig(e.cfg)
	e.ssm = ssm.NewFromConfig(e.cfg)
	e.iam = iam.NewFromConfig(e.cfg)
	e.sqs = sqs.NewFromConfig(e.cfg)
	e.eks = eks.NewFromConfig(e.cfg)
	e.price = pricing.NewFromConfig(e.cfg)
}

// advance moves the fake clock and runs one lifecycle step.
func (e *env) advance(d time.Duration) {
	e.clock.Step(d)
	e.sim.Step(context.Background())
}
