package teardown

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/cli/kube"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// Options are the command's flags.
type Options struct {
	Kubeconfig  string
	ClusterName string
	Region      string
	Timeout     time.Duration
	Interval    time.Duration
	DryRun      bool
	SkipAWS     bool
}

// NewCommand returns `dovetailctl teardown`.
func NewCommand() *cobra.Command {
	o := Options{}
	cmd := &cobra.Command{
		Use:   "teardown",
		Short: "Delete every node Dovetail launched, then its node classes, and report what is left on AWS",
		Long: `teardown removes what Dovetail runs for a cluster, in order: it stops provisioning for the NodePools
(limits set to zero), deletes them and their NodeClaims, waits while the running Dovetail controller drains
the nodes and terminates the instances, deletes the EC2NodeClasses (their finalizer removes the instance
profiles and launch templates Dovetail made) and finally lists any EC2 instance, launch template or instance
profile still tagged for the cluster. It exits non-zero if anything is left after --timeout.

Run it before removing the Dovetail controller, e.g. from a Helm pre-delete hook or a Terraform destroy-time
provisioner (see docs/termination.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return run(ctx, o, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&o.ClusterName, "cluster-name", os.Getenv("CLUSTER_NAME"), "cluster name as tagged on AWS resources (default $CLUSTER_NAME)")
	f.StringVar(&o.Region, "region", "", "AWS region (default $AWS_REGION)")
	f.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "give up (exit non-zero) if anything is left after this long")
	f.DurationVar(&o.Interval, "interval", 5*time.Second, "how often to print progress")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be deleted and change nothing")
	f.BoolVar(&o.SkipAWS, "skip-aws", false, "do not query AWS for leftovers (cluster objects only)")
	return cmd
}

// Validate checks the flags.
func (o Options) Validate() error {
	if o.ClusterName == "" {
		return fmt.Errorf("--cluster-name (or CLUSTER_NAME) is required: it is how AWS resources are tagged")
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %s", o.Timeout)
	}
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", o.Interval)
	}
	return nil
}

func run(ctx context.Context, o Options, cmd *cobra.Command) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cfg, err := kube.Config(o.Kubeconfig)
	if err != nil {
		return err
	}
	kc, err := kube.NewClient(cfg)
	if err != nil {
		return err
	}
	uid, err := kube.ClusterUID(ctx, kc)
	if err != nil {
		return err
	}
	t := &Teardown{
		Kube:     kc,
		Cluster:  tags.Cluster{Name: o.ClusterName, UID: uid},
		Clock:    clock.RealClock{},
		Out:      cmd.OutOrStdout(),
		Timeout:  o.Timeout,
		Interval: o.Interval,
		DryRun:   o.DryRun,
	}
	if !o.SkipAWS {
		awsCfg, err := sdk.LoadConfig(ctx, o.Region)
		if err != nil {
			return fmt.Errorf("%w (or pass --skip-aws)", err)
		}
		t.EC2, t.IAM = ec2.NewFromConfig(awsCfg), iam.NewFromConfig(awsCfg)
	}
	return t.Run(ctx)
}
